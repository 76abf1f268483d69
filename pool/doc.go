// Package pool is a generic object pool run by an actor.
//
// One goroutine, the actor, owns every decision that needs the pool's whole
// state: when to create an object and for whom, which idle objects to test or
// destroy, when the pool has finished closing. Callers talk to it through a
// mailbox, and only when they must. The common cases take no round trip:
//
//   - Idle objects wait in a buffered channel. Take receives from it without
//     blocking; GiveBack sends to it. A caller that has to wait blocks on the
//     same channel, so a given-back object goes straight to the caller that
//     has waited longest (Go hands a channel value to its oldest receiver).
//   - Counters that callers read (how many objects exist, how many wait) are
//     atomics written by their single owner.
//
// A caller asks the actor for a new object only when the pool is below
// MaxObjects; the actor starts creations (at most MaxConcurrentCreates at a
// time) and hands the result to the caller that asked, or, if that caller has
// gone, to the idle channel and so to the next waiter. Every Take hands out a
// Handle: give it back with GiveBack, or with Discard when the object is
// broken. A Handle that is lost without either is found by the garbage
// collector (package leak), reported as LEAK-DETECTED and its object destroyed
// so that its slot is freed.
//
// The pool's notion of time for idle time, lifetime and hold time advances
// once per ValidationInterval (the actor's tick), which keeps the clock off
// the fast path; those limits are enforced to within one interval.
package pool
