package pool

import (
	"sync/atomic"

	"github.com/respool/respool/internal/leaktrack"
)

// entry is one pooled object and its bookkeeping.
//
// Ownership: an entry is in exactly one place at a time: being created (the
// actor's), idle (in a shard of Pool.idle or in Pool.queue), out (a caller's,
// lease odd), under test (the actor's) or being destroyed. Moving an entry out of "out" takes a
// compare-and-swap on lease, which is what makes a second GiveBack, or a
// GiveBack racing the leak detector, harmless.
type entry[T any] struct {
	// Entries are allocated side by side, and two Ps each reusing its own
	// warm entry write to it on every take and give-back: a line of padding
	// keeps one entry's fields off the line where the previous one ends.
	_ [cacheLine]byte

	kind entryKind // kindObject but for the markers; immutable
	obj  T
	pool *Pool[T] // immutable

	// lease counts hand-outs and hand-backs: odd while a caller holds the
	// object, even otherwise. A Handle carries the odd value it was given.
	lease atomic.Uint64

	expiresAt int64 // a clock reading; 0 means never; immutable

	// gen is the count of Resets when its creation started (Pool.retire);
	// immutable.
	gen uint64

	// observedLease is the lease taken under an Observer (Pool.observeTaken),
	// whose takenAt its give-back reports; written by the taker.
	observedLease atomic.Uint64

	// release gives back the slot of Config.Budget the object's creation
	// took, once the object is destroyed; nil without a Budget. Immutable.
	release func()

	// reclaimed is set by the actor when it destroys the entry for the
	// pool's Reclaimer (actor.yielding counts it until it is destroyed).
	reclaimed bool

	// home is the shard the entry goes back to when idle: that of the P
	// that last took it from a shard. Written by whoever owns the entry.
	home int

	// idleSince is written before the entry is made idle and read after it
	// is taken back (the shard.s mutex or the queue channel orders the two).
	idleSince int64

	// takenAt (a clock reading) and site describe the current lease;
	// written by the taker, read by the actor's hold-time scan.
	takenAt atomic.Int64
	site    atomic.Pointer[leaktrack.Site]

	// unwatched is the leak token of the current (or last) lease until the
	// actor watches it (see leaks.go); nil when leak tracking is off.
	// Written by the taker, swapped to nil by the actor.
	unwatched atomic.Pointer[leaktrack.Token]

	// heldReported is the lease already reported as held too long. Only the
	// actor touches it.
	heldReported uint64

	// lentAt (a clock reading; 0: not measured) and lentLease are the take
	// of a caller that waited, whose hold the overload policy measures
	// (see overload.go). Written and read by whoever owns the entry.
	lentAt    int64
	lentLease uint64
}

// Handle is one Take's claim on an object. Keep it until GiveBack or Discard:
// when leak tracking is on, a Handle that becomes unreachable before then is
// reported as a leak and its object destroyed, even if the object itself is
// still referenced.
//
// A Handle is a small value; copies refer to the same claim, and only the
// first GiveBack or Discard of any copy counts. Copies of a Handle already
// given back do not hide the loss of a later Handle of the same object: each
// Take's Handle has its own token.
//
// Do not store a Handle in (or anywhere reachable from) its own object, such
// as obj.owner = &session{h}: the pool holds the object, so such a Handle is
// never unreachable, its loss is never found, and Close waits for it in vain.
// Keep Handles beside the objects they hold.
type Handle[T any] struct {
	e     *entry[T]
	lease uint64
	token *leaktrack.Token // this lease's; nil when leak tracking is off
}

// Value returns the object. It must not be used after the Handle is given
// back or discarded.
func (h Handle[T]) Value() T { return h.e.obj }
