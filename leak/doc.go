// Package leak finds objects that were taken from a pool and never given
// back.
//
// Two detectors work together. The garbage collector finds a lost handle: the
// holder keeps a Token reachable for as long as it holds the object, and
// Watch arranges for a function to run once the Token becomes unreachable
// (runtime.AddCleanup). The pool then logs LEAK-DETECTED with the Site where
// the object was taken and reclaims the object. A hold-time threshold finds a
// handle that is still reachable but held too long (a forgotten *sql.Rows);
// it is reported once, as HELD-TOO-LONG, with the same Site.
//
// Capturing a Site costs a stack walk per take; it can be switched off, and
// then reports say where the pool is but not who took the object.
//
// This package imports no other respool package.
package leak
