package pool

import "github.com/respool/respool/internal/leaktrack"

// Leak tracking.
//
// Each Take's Handle carries a token of its own (one 16-byte allocation per
// take), so that a copy of an earlier Handle, which keeps only its own
// lease's token alive, cannot hide the loss of a later one. Asking the
// runtime to watch a token costs far more than the take (a cleanup record:
// a few hundred nanoseconds), so tokens are watched lazily: the entry keeps
// the current lease's token (unwatched) until the actor watches it, after
// each garbage collection, at each tick and when closing begins. Most leases
// end before that and are never watched; their tokens are plain garbage. A
// lost lease is watched at the first of those events after its Take, and
// found by the collection after that: within two collections, provided
// the actor had its turn between them (two runtime.GC calls back to back
// may leave it none; the next collection then finds the loss).
//
// Once watched, the token is referenced by the Handle's copies only (the
// entry lets go of it), so it becomes unreachable exactly when every copy of
// that lease's Handle is lost. Its cleanup then reclaims the object if that
// lease is still out.

// leaseRef names one lease of an entry, for its token's cleanup (which must
// not reference the token).
type leaseRef[T any] struct {
	e     *entry[T]
	lease uint64
}

// newToken makes the leak token of e's new lease and keeps it on e until
// the actor watches it.
func (p *Pool[T]) newToken(e *entry[T], lease uint64) *leaktrack.Token {
	tok := &leaktrack.Token{Lease: lease}
	e.unwatched.Store(tok)
	return tok
}

// watchLeases has the runtime watch the tokens of the leases out now, and
// lets go of the tokens of leases that have ended.
func (a *actor[T]) watchLeases() {
	p := a.p
	if p.cfg.LeakTrackingDisabled {
		return
	}
	for e := range a.all {
		tok := e.unwatched.Load()
		if tok == nil {
			continue
		}
		if e.lease.Load() == tok.Lease { // still out
			leaktrack.Watch(tok, leaseRef[T]{e, tok.Lease}, p.reclaimLost)
		}
		e.unwatched.CompareAndSwap(tok, nil) // fails if a new lease has begun: it keeps its own
	}
}

// reclaimLost runs on the runtime's cleanup goroutine once the token of
// ref's lease has been collected: if that lease is still out, every copy of
// its Handle is lost, and the object is reported and destroyed. Otherwise
// the lease ended normally and this is a no-op.
func (p *Pool[T]) reclaimLost(ref leaseRef[T]) {
	if !ref.e.lease.CompareAndSwap(ref.lease, ref.lease+1) {
		return
	}
	p.counters.leaks.Add(1)
	p.emit(Event{Kind: EventLeak, TakenAt: ref.e.site.Load().String()}, true)
	p.destroy(ref.e, reasonLeaked)
}

// notifyGC has the actor watch the leases out after each garbage
// collection, until the pool is done.
func (p *Pool[T]) notifyGC() {
	if p.cfg.LeakTrackingDisabled {
		return
	}
	sendOnGC(p.mailbox, p.done)
}

// sendOnGC sends msgGC to mailbox after each garbage collection, until done
// is closed.
func sendOnGC[T any](mailbox chan<- message[T], done <-chan struct{}) {
	leaktrack.OnGC(func() bool {
		select {
		case <-done:
			return false
		case mailbox <- message[T]{kind: msgGC}:
		default: // the actor is busy: the next collection will do
		}
		return true
	})
}
