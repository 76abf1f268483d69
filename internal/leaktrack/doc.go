// Package leaktrack is the machinery behind package leak: tokens watched by
// the garbage collector, captured call sites and the report lines. Only the
// pool uses it; users configure it through leak.Config and search logs for
// leak.MsgLeak and leak.MsgHeld.
//
// It imports no other respool package but leak, for the message constants.
package leaktrack
