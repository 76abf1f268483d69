// Package pool is a generic object pool run by an actor.
//
// One goroutine, the actor, owns every decision that needs the pool's whole
// state: when to create an object and for whom, which idle objects to test or
// destroy, which waiting caller a freed slot goes to, when the pool has
// finished closing. Callers talk to it through a mailbox, and only when they
// must. The common cases take no round trip:
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
//   - Counters that callers read (how many objects exist, how many wait, how
//     many Takes there were) are atomics written by their single owner, or
//     counted per P or under a shard's lock; Stats reads them without asking
//     the actor.
//
// A waiting caller asks the actor for a creation of its own when the pool is
// below MaxObjects and nobody waits for a give-back; otherwise it waits for
// a give-back, and only those callers count against MaxQueueSize, so no
// caller is refused while the pool has room. When a slot frees on a full
// pool, the actor offers it through the queue channel, as a slot marker, to
// the caller that has waited longest, which then asks for its creation: a
// newcomer cannot take the slot first. The actor starts creations (at most
// MaxConcurrentCreates at a time) and hands the result to the caller that
// asked, or, if that caller has gone, to the idle objects and so to the next
// waiter. A creation runs with the values of the caller's context but not
// its cancellation, bounded by CreateTimeout and by Close.
//
// Every bound is the pool's own, whether or not the factory heeds its
// context: AcquireTimeout ends a Take's wait, CreateTimeout a creation,
// TestTimeout a Test or a hook; at the bound the caller gets an error and the
// slot is freed, and an object that arrives late is destroyed.
//
// Every Take hands out a Handle: give it back with GiveBack, or with Discard
// when the object is broken. A Handle that is lost without either is found
// by the garbage collector (see package leak), reported as LEAK-DETECTED and
// its object destroyed so that its slot is freed; Close runs collections to
// find such Handles. Each Take's Handle has its own token (one small
// allocation per Take with leak tracking on), so live copies of earlier
// Handles never hide a later loss. A Handle must not be stored in its own
// object (see Handle).
//
// The pool's time for idle time is a coarse clock advanced once per
// ValidationInterval (the actor's tick), which keeps the clock off the fast
// path: MaxIdle is enforced to within one interval, and handles held past
// Leak.HoldThreshold are reported at the first tick after it. Lifetimes and
// hold times are measured with a clock read at the Take, made only when
// MaxLifetime or HoldThreshold is set, so that an expired object is never
// handed out and a hold is reported with its true length.
package pool
