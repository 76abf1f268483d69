// Package pool is a generic object pool run by an actor.
//
// One goroutine, the actor, owns every decision that needs the pool's whole
// state: when to create an object and for whom, which idle objects to test or
// destroy, when the pool has finished closing. Callers talk to it through a
// mailbox, and only when they must. The common cases take no round trip:
//
//   - Idle objects wait in shards, small stacks each used mostly by one P, so
//     that callers on different Ps do not contend. Take pops from its P's
//     shard without blocking, getting the object given back last (warm, and
//     the others idle out); GiveBack pushes to it. A shard's mutex
//     guards only that list and is held for a push or a pop, never across a
//     call: it is the one piece of state callers touch directly, chosen over
//     a channel per shard because it measured 3-4x faster under parallel
//     load (see bench/).
//   - A caller that has to wait counts itself in waiting and blocks on one
//     queue channel; while anyone waits, GiveBack sends to that channel
//     instead, so a given-back object goes straight to the caller that has
//     waited longest (Go hands a channel value to its oldest receiver), and
//     Take does not overtake waiting callers.
//   - Counters that callers read (how many objects exist, how many wait) are
//     atomics written by their single owner.
//
// A caller asks the actor for a new object only when the pool is below
// MaxObjects; the actor starts creations (at most MaxConcurrentCreates at a
// time) and hands the result to the caller that asked, or, if that caller has
// gone, to the idle objects and so to the next waiter. Every Take hands out a
// Handle: give it back with GiveBack, or with Discard when the object is
// broken. A Handle that is lost without either is found by the garbage
// collector (package leak), reported as LEAK-DETECTED and its object destroyed
// so that its slot is freed.
//
// The pool's notion of time for idle time, lifetime and hold time advances
// once per ValidationInterval (the actor's tick), which keeps the clock off
// the fast path; those limits are enforced to within one interval.
package pool
