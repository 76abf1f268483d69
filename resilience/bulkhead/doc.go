// Package bulkhead bounds how many calls run at once, so that one slow
// dependency cannot take every goroutine, connection or thread of a
// service with it (Release It!'s bulkheads; the seed's separate dispatcher
// for blocking database calls).
//
// Application code calls it, by hand or in a compose.Stack's Bulkhead
// slot; no package of the library imports it.
//
// At most MaxConcurrent calls run; up to QueueSize more wait in FIFO order,
// each at most MaxWait and until its context ends; the rest are rejected at
// once with a *resilience.RejectedError matching ErrFull. A finished call
// hands its slot straight to the first waiter.
//
// A Bulkhead is a resilience.Guard. Its uncontended path is one
// compare-and-swap in and one atomic add out, and allocates nothing.
package bulkhead
