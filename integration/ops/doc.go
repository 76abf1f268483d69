// Package ops tests respool's operating surface (package health) against
// a real PostgreSQL server that it stops and starts.
package ops
