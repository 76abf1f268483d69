// Package leaktrack is the machinery behind package leak: tokens watched by
// the garbage collector and captured call sites. Only the pool uses it; it
// reports what it finds as pool events (pool.EventLeak, logged as
// leak.MsgLeak; pool.EventHeldTooLong, as leak.MsgHeld). Users configure it
// through leak.Config.
//
// It imports no other respool package.
package leaktrack
