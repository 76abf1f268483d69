package pool

import (
	"context"
	"runtime"
	"time"
)

// GiveBack returns h's object to its pool: it is validated, then handed to
// the caller that has waited longest, or kept idle. An object that fails
// Validate or has outlived its lifetime is destroyed. In a Keyed, the object
// goes back to its key. Giving back twice (or after Discard, or after the
// object was reclaimed as leaked) returns ErrAlreadyReturned, as does the
// zero Handle; the pool is unharmed.
func (h Handle[T]) GiveBack() error {
	if h.e == nil {
		return ErrAlreadyReturned
	}
	return h.e.pool.giveBack(h)
}

// Discard destroys h's object instead of giving it back: use it for an
// object found broken. Its slot is freed for a new object (in a Keyed, it
// goes to whoever waits for the budget first). It returns
// ErrAlreadyReturned as GiveBack does.
func (h Handle[T]) Discard() error {
	if h.e == nil {
		return ErrAlreadyReturned
	}
	return h.e.pool.discard(h)
}

// giveBack is GiveBack for h, a Handle of p.
func (p *Pool[T]) giveBack(h Handle[T]) error {
	e, err := p.claim(h)
	if err != nil {
		return err
	}
	r := p.retire.Load()
	switch {
	case !p.valid(e.obj):
		p.destroy(e, reasonInvalid)
	case e.expiresAt != 0 && p.now.Load() >= e.expiresAt:
		p.destroy(e, reasonLifetime)
	case r>>1 != e.gen: // a Reset since it was made
		p.destroy(e, reasonReset)
	case p.f.AfterGiveBack != nil && !p.closed.Load():
		p.afterGiveBack(e) // then putIdle, which looks at retire again
	case r&1 != 0: // the pool holds more than its size: the actor decides
		p.retireEntry(e, r)
	default:
		p.putIdleAt(e, r)
	}
	return nil
}

// afterGiveBack runs the AfterGiveBack hook on e in the background, bounded
// by TestTimeout and Close, then makes e idle or destroys it. Past the bound
// the pool gives up on e, which is destroyed when the hook returns; its slot
// is freed then (see goBounded).
func (p *Pool[T]) afterGiveBack(e *entry[T]) {
	p.checking.Add(1)
	goBounded(p, context.Background(), p.cfg.TestTimeout, "AfterGiveBack",
		func(ctx context.Context) error { return p.f.AfterGiveBack(ctx, e.obj) },
		func(err, errBound error) {
			p.checking.Add(-1)
			switch {
			case errBound != nil: // the hook still runs: its goroutine destroys the object
				p.send(message[T]{kind: msgAbandoned, e: e})
			case err != nil:
				p.destroy(e, reasonRejected)
			default:
				p.putIdle(e)
			}
		},
		func(error) {
			p.destroyLate(e.obj, e.release, reasonRejected)
			p.lateEnded(e)
		})
}

// discard is Discard for h, a Handle of p.
func (p *Pool[T]) discard(h Handle[T]) error {
	e, err := p.claim(h)
	if err != nil {
		return err
	}
	p.destroy(e, reasonDiscarded)
	return nil
}

// claim ends h's lease, so that exactly one GiveBack, Discard or leak
// reclaim wins.
func (p *Pool[T]) claim(h Handle[T]) (*entry[T], error) {
	e := h.e
	if !e.lease.CompareAndSwap(h.lease, h.lease+1) {
		return nil, ErrAlreadyReturned
	}
	// h.token stays reachable until the lease has ended, so the leak
	// detector cannot reclaim the object under us.
	runtime.KeepAlive(h.token)
	if o := p.observer.Load(); o != nil && o.Use != nil && e.observedLease.Load() == h.lease { // taken under an Observer
		o.Use(time.Duration(p.clock() - e.takenAt.Load()))
	}
	return e, nil
}

// putIdle makes e idle, which hands it to the longest waiter if there is one.
// The actor does not call it: in a Keyed whose other keys' callers wait for
// the budget, it may send e to the actor, to be destroyed for them (yield).
//
// An object made before the last Reset is destroyed instead, and one given
// back while the pool holds more than its size in force goes to the actor
// (see resize.go).
func (p *Pool[T]) putIdle(e *entry[T]) {
	if r := p.retire.Load(); r != e.gen<<1 {
		p.retireEntry(e, r)
		return
	}
	p.putIdleAt(e, e.gen<<1)
}

// putIdleAt is putIdle for e, which matched r, a reading of retire. If a
// Reset or a Resize came since r, the actor may have looked at the idle
// objects before e was among them: it is asked to look again.
func (p *Pool[T]) putIdleAt(e *entry[T], r uint64) {
	e.idleSince = p.now.Load()
	b := p.keyed
	if b == nil {
		p.pushIdle(e)
	} else if b.yielding(p) {
		p.send(message[T]{kind: msgYield, e: e})
		return
	} else {
		p.pushIdle(e)
		b.idled(p)
	}
	if p.retire.Load() != r {
		p.send(message[T]{kind: msgRetire})
	}
}

// pushIdle is putIdle keeping e's idleSince (an object back from its test).
//
// With callers waiting, e goes to queue and so to the one that has waited
// longest. Otherwise it goes to its home shard, and then waiting is read
// again: a caller that started waiting meanwhile (the first one to, waiting
// going from 0 to 1) either saw e in the shard when it flushed the shards to
// queue after counting itself in waiting (takeSlow), or it counted itself
// before that second read, which then sees it and flushes the shards to
// queue here. Either way e cannot sit in a shard while a caller waits for it
// (see flushToQueue).
func (p *Pool[T]) pushIdle(e *entry[T]) {
	if p.waiting.Load() != 0 {
		p.queue <- e // never blocks: see markers.go
	} else {
		p.idle.shards[e.home&p.idle.mask].push(e)
		if p.waiting.Load() != 0 {
			p.flushToQueue()
		}
	}
	if p.closed.Load() {
		// Close may have drained idle before our push: drain it again, so
		// that none is left behind.
		p.returnSlots(p.drainClosed())
	}
}

// flushToQueue moves every entry in the shards to queue, where waiting
// callers get them in FIFO order.
func (p *Pool[T]) flushToQueue() {
	for i := range p.idle.shards {
		s := &p.idle.shards[i]
		for e := s.pop(); e != nil; e = s.pop() {
			e.lentAt = 0 // it was idle: its next hold is not measured from its last take
			p.queue <- e // never blocks
		}
	}
}

// drainClosed destroys every idle entry (the pool is closed) and returns
// how many slot markers it took from queue: its caller gives them back
// (the actor directly, anyone else with returnSlots).
func (p *Pool[T]) drainClosed() (slots int) {
	for i := range p.idle.shards {
		s := &p.idle.shards[i]
		for e := s.pop(); e != nil; e = s.pop() {
			p.destroy(e, reasonClosed)
		}
	}
	wake := false
	for {
		select {
		case e := <-p.queue:
			switch e.kind {
			case kindWake:
				wake = true // put back below, for the waiters still to wake
			case kindSlot:
				slots++
			default:
				p.destroy(e, reasonClosed)
			}
		default:
			if wake {
				p.queue <- p.wake
			}
			return slots
		}
	}
}
