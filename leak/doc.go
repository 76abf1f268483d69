// Package leak configures how a pool finds objects that were taken and never
// given back, and names the log messages it reports them with.
//
// Two detectors work together. The garbage collector finds a lost handle:
// every Take hands out a pool.Handle that keeps a token reachable for as long
// as the caller holds it; once no copy of that Handle is reachable, the pool
// logs MsgLeak (LEAK-DETECTED) with where the object was taken, destroys the
// object and frees its slot. A hold-time threshold finds a handle that is
// still reachable but held too long (a *sql.Tx or *sql.Conn never ended,
// which database/sql keeps reachable); it is reported once per take as
// MsgHeld (HELD-TOO-LONG).
//
// Capturing the taker's stack costs a stack walk per take; it is off by
// default, and then reports name the pool but not who took the object.
//
// This package imports no other respool package; the machinery lives in
// internal/leaktrack.
package leak
