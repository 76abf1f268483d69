// Package pool is a generic object pool run by an actor.
//
// Code that pools objects of its own calls it: native *pgx.Conn through
// respool.PgxFactory (and dbguard.Factory), or anything else. Package
// respool builds one Pool per Connector and one Keyed per Group; health,
// httpguard and metrics/prometheus read its Stats and errors. It knows
// nothing of databases.
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
// below its effective size (MaxObjects, unless back-pressure lowered it) and
// nobody waits for a give-back; otherwise it waits for a give-back, and only
// those callers count against MaxQueueSize, so no caller is refused while
// the pool has room. When a slot frees on a full
// pool, the actor offers it through the queue channel, as a slot marker, to
// the caller that has waited longest, which then asks for its creation: a
// newcomer cannot take the slot first. The actor starts creations (at most
// MaxConcurrentCreates at a time) and hands the result to the caller that
// asked, or, if that caller has gone, to the idle objects and so to the next
// waiter. A creation runs with the values of the caller's context but not
// its cancellation, bounded by CreateTimeout and by Close.
//
// A caller waiting for its creation also takes the first object given back,
// and its request, if not started yet, is dropped. While objects are alive
// (they may come back before a new one is made), creations are paced: one
// at a time, and one more at once for each that ends for a caller still
// waiting, so that a spike the objects given back can serve costs one
// creation, not one per caller, and a demand that lasts doubles the
// creations in flight every creation time. With nothing alive, every
// request starts at once.
//
// Every bound is the pool's own, whether or not the factory heeds its
// context: AcquireTimeout ends a Take's wait, CreateTimeout a creation,
// TestTimeout a Test or a hook; at the bound the caller gets an error, and an
// object that arrives late is destroyed. What a call given up on works on
// exists until the call returns, so its slot stays taken until then:
// MaxObjects bounds the objects that exist (a server's connections), those
// of calls given up on included, and Close waits for them.
//
// When creations fail, the pool backs off as a whole, not once per waiting
// caller (Config.BackoffInitial and the fields after it; on by default):
// after a failure it makes no
// attempt for a delay (50ms, doubling up to 1s, drawn between half and all
// of it), then one attempt at a time, for the oldest caller waiting, until
// one succeeds. A caller that needs a creation waits for the next attempt;
// it fails at once, with a *CreateError carrying the last failure and when
// the next attempt comes (RetryAfter), when its deadline comes first and no
// object is alive to be given back; a caller without a deadline gets the
// next attempt's outcome; a wait ended by its deadline meanwhile says so
// and names the last failure (*WaitError). A Create error that carries its
// own retry time (a method RetryAfter() time.Time, as the rejections of
// package resilience have) fails every caller waiting for a creation with
// it and holds creations until then. Failures are logged by state, not by
// attempt: the first of a run, when its caller got it, at Debug (the caller
// reports it); a run that persists (the attempt after the backoff fails
// too) or a failure nobody got at Warn, then at most once per
// Config.FailureLogInterval, as one line with their count; the end of a
// run logged at Warn at Info.
//
// Config.BackPressure recognises the creation errors by which a server says
// it is full. The pool then makes do with the objects alive, which the
// server accepted: its effective size (Stats.EffectiveMaxObjects) drops to
// them, it makes no creation for the delay the error names, and then grows
// back one creation at a time, by one object per success, while callers
// beyond the effective size wait for give-backs, in FIFO order and within
// MaxQueueSize.
//
// The queue policy is stated by Config.Overload. Callers waiting for a
// give-back are served first in, first out. Under overload, when at least
// as many callers wait as there are objects in use, the default policy
// (OverloadDeadline) fails at once, with an *OverloadError, a caller whose
// context's deadline comes before its expected turn plus one mean hold
// (both estimated from its place in the queue and the hold times measured
// while callers waited; AcquireTimeout bounds the turn alone), and a caller
// whose turn comes with less than a mean hold left leaves the object to
// the next one and fails alike: the callers that can still make it are
// served in time instead of everyone too late. Callers without a deadline
// are never refused, and below overload nothing changes. OverloadFIFO turns
// this off; OverloadCoDel is the controlled delay of Facebook's "Fail at
// Scale" (see OverloadPolicy, and bench/ for the measurements).
//
// Every Take hands out a Handle: give it back with its GiveBack, or with its
// Discard when the object is broken (a Handle knows its pool, as puddle's
// Resource does). A Handle that is lost without either is found by the
// garbage collector (unless Config.LeakTrackingDisabled), reported as
// LEAK-DETECTED and its object destroyed so that its slot is freed; Close
// runs collections to find such Handles. Each Take's Handle has its own token (one small
// allocation per Take with leak tracking on), so live copies of earlier
// Handles never hide a later loss. A Handle must not be stored in its own
// object (see Handle).
//
// The pool's time for idle time is a coarse clock advanced once per
// ValidationInterval (the actor's tick), which keeps the clock off the fast
// path: MaxIdle is enforced to within one interval, and handles held past
// Config.HoldThreshold are reported at the first tick after it. Lifetimes and
// hold times are measured with a clock read at the Take, made only when
// MaxLifetime or HoldThreshold is set, so that an expired object is never
// handed out and a hold is reported with its true length.
//
// A Keyed is several pools, one per key (a primary and its replicas, one per
// tenant), under one budget of objects across every key, run by one actor:
// a key that needs an object while the budget is spent waits in FIFO order
// with the other keys' callers, and gets the slot of another key's idle
// object (least recently used, never below that key's MinIdle) or of one
// given back to a key that does not need it (see Keyed).
//
// Reset closes every object made before it, as pgxpool's does: idle ones
// at once, those in use when given back, those being created when their
// creation ends (their caller gets a new one); none is handed out after
// it. Resize changes MaxObjects and MinIdle while the pool runs, within the
// MaxObjects it was made with (its wait queue is allocated for that):
// growing offers the new slots to the waiting callers at once, shrinking
// destroys idle objects first and then objects given back while the pool
// holds more than its new size. Both cost the fast paths one atomic load
// each way: an entry carries the count of Resets when its creation began,
// which a Take and a GiveBack compare with the pool's (see resize.go).
//
// What happens to a pool (a creation failing or recovering, an object
// destroyed and why, a leak, a hold past the threshold, closing) is an
// Event: logged through Config.Logger (log/slog) at the level its EventKind
// states, with the attribute names listed in EventKind's doc (stable, for
// log queries), and passed to Config.OnEvent for users who route events
// elsewhere. Stats counts the same things for metrics (see package health
// and the metrics/prometheus module).
package pool
