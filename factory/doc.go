// Package factory describes the life-cycle of the objects a pool manages:
// Create, Validate, Test and Destroy, and optional Hooks around them.
//
// Validate is fast and in-memory ("is this object still usable?") and runs on
// every hand-out and hand-back; Test may be slow and use the network (a ping)
// and runs on idle objects only. Hooks add steps after a creation, before a
// hand-out and after a give-back, each bounded by the pool. Funcs adapts plain
// functions; Connector adapts any database/sql/driver.Connector using only
// the standard library.
//
// This package imports no other respool package.
package factory
