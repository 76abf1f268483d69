package pool

import (
	"strconv"

	"github.com/respool/respool/internal/resil"
)

// Reset and Resize.
//
// Reset counts itself in Pool.retire (retire>>1) and tells the actor. Every
// entry carries the count of Resets when its creation started (entry.gen),
// and an entry whose count is not the current one is never handed out or
// made idle again: a hand-out (handOut) and a give-back (putIdle) compare
// it with retire, one atomic load each, and destroy it as reset. The actor
// destroys those idle (onRetire), those back from a test (place) and those
// of creations that started before the Reset (onCreated), whose caller asks
// again. A give-back that read retire before a Reset and made its object
// idle after the actor looked reads retire again and asks the actor to look
// again (putIdleAt).
//
// Resize stores the size in force (Pool.size) and tells the actor, which
// reads it (onRetire): capacity follows at once, so a larger size offers
// its slots to the queued callers, and a smaller one destroys idle objects
// (as resized) while the pool holds more than it. While objects in use
// still exceed it, the actor sets bit 0 of retire (publishSurplus): a
// give-back then goes to the actor (msgSurplus), which destroys the object
// or, once the pool is back within its size, makes it idle.

// Reset closes every object made before it, as pgxpool's Reset does, for
// when something has made every connection stale at once (a failover, a
// server that became read-only), and ends a hold of creations after a
// failure (a backoff, a retry-after, back-pressure, whose lowered size
// ends too): idle objects are destroyed now, objects in
// use when they are given back (GiveBack destroys them, as Discard would),
// and objects whose creation was under way are destroyed when it ends, the
// caller that waited for one getting a new creation (or the next object
// given back). No object made before Reset is handed out after it returns.
// They are counted in Stats.Destroys.Reset. The pool stays open and
// refills to MinIdle as usual. Reset returns without waiting for the
// objects to be destroyed; on a closed pool it does nothing.
func (p *Pool[T]) Reset() {
	if p.closed.Load() {
		return
	}
	p.retire.Add(2)
	p.sendRetire()
}

// Resize changes the pool's size while it runs: maxObjects is the most
// objects alive from now on, minIdle how many it keeps idle. maxObjects
// must be between 1 and Config().MaxObjects, the size the pool was made
// with, for which its wait queue is allocated (make a pool with the most
// you may want, and Resize it down); minIdle between 0 and maxObjects, and
// in a Keyed at most the key's Config().MinIdle, so that the keys' MinIdle
// together stay within the Keyed's budget (which Resize does not change).
// A bad value gets a *resilience.ConfigError naming it and what is
// accepted, and changes nothing; a closed pool, ErrClosed.
//
// Growing offers the new slots to the callers waiting at once. Shrinking
// destroys idle objects first, and then objects given back while the pool
// still holds more than maxObjects (Stats.Destroys.Resized); no caller's
// object is taken from it. MinIdle is refilled as usual. Stats.MaxObjects
// shows the size in force once Resize returns; back-pressure's effective
// size (Stats.EffectiveMaxObjects) stays at most that. Resize returns
// without waiting for objects to be created or destroyed.
func (p *Pool[T]) Resize(maxObjects, minIdle int) error {
	ceiling := p.cfg.MaxObjects
	accepted := "between 1 and " + strconv.Itoa(ceiling) + " (the pool's Config.MaxObjects, for which it was made)"
	minAccepted := "between 0 and " + strconv.Itoa(maxObjects) + " (maxObjects)"
	if p.keyed != nil && p.cfg.MinIdle < maxObjects {
		minAccepted = "between 0 and " + strconv.Itoa(p.cfg.MinIdle) +
			" (the key's Config.MinIdle: the keys' MinIdle together stay within the Keyed's MaxObjects)"
	}
	if err := resil.FirstError(
		resil.Check(maxObjects >= 1 && maxObjects <= ceiling, mechanism, "MaxObjects", maxObjects, accepted),
		resil.Check(minIdle >= 0 && minIdle <= maxObjects && (p.keyed == nil || minIdle <= p.cfg.MinIdle),
			mechanism, "MinIdle", minIdle, minAccepted),
	); err != nil {
		return err
	}
	p.resizeMu.Lock()
	defer p.resizeMu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	p.size.Store(packSize(maxObjects, minIdle))
	p.sendRetire()
	return nil
}

// sendRetire tells the actor to look at the idle objects and the size in
// force. The actor runs until Close has ended, and its mailbox is read
// after every event, so the send cannot block for long.
func (p *Pool[T]) sendRetire() {
	select {
	case p.mailbox <- message[T]{kind: msgRetire, p: p}:
	case <-p.done:
	}
}

// packSize packs a size into Pool.size.
func packSize(maxObjects, minIdle int) uint64 { return uint64(maxObjects)<<32 | uint64(minIdle) }

// sizeNow returns the size in force: MaxObjects and MinIdle.
func (p *Pool[T]) sizeNow() (maxObjects, minIdle int) {
	s := p.size.Load()
	return int(s >> 32), int(s & (1<<32 - 1))
}

// retireEntry handles e, given back or made idle while r, a reading of
// retire, does not match it: destroyed if a Reset came since it was made,
// else (the pool holds more than its size) handed to the actor to decide.
func (p *Pool[T]) retireEntry(e *entry[T], r uint64) {
	if r>>1 != e.gen {
		p.destroy(e, reasonReset)
		return
	}
	p.send(message[T]{kind: msgSurplus, e: e})
}

// onRetire takes the size in force and looks at every idle object: those
// made before the last Reset, and those beyond the size, are destroyed.
func (a *actor[T]) onRetire() {
	p := a.p
	if a.closing {
		return
	}
	old := a.maxObjects
	a.maxObjects, a.minIdle = p.sizeNow()
	if g := &a.gate; g.limit >= old { // back-pressure does not hold it down: follow the size
		g.limit = a.maxObjects
	} else {
		g.limit = min(g.limit, a.maxObjects)
	}
	if r := p.retire.Load() >> 1; r != a.resets {
		// A Reset: whatever made every object stale may have made the
		// last creation failure stale too (a failover, new credentials):
		// a hold of creations for a backoff, a retry-after or
		// back-pressure ends, the size lowered by back-pressure is the
		// size in force again (a server still full says so at the next
		// creation), and the next creation is made at once.
		a.resets = r
		g := &a.gate
		g.limit, g.growFromAlive = a.maxObjects, false
		if g.held {
			a.release() // stops the timer whose onRetryDue would start the next creation:
			a.publishFailure()
			a.startCreates() // the callers waiting for it get it now
		}
	}
	a.needRefill = true
	a.retireIdle()
}

// retireIdle looks at every idle object (place).
func (a *actor[T]) retireIdle() {
	p := a.p
	for i := range p.idle.shards {
		// Oldest first: the objects given back longest ago go first, and
		// those kept go back in their order.
		a.batch = p.idle.shards[i].drainInto(a.batch[:0])
		for _, e := range a.batch {
			a.place(e)
		}
		clear(a.batch)
	}
	for n := len(p.queue); n > 0; n-- {
		select {
		case e := <-p.queue:
			switch e.kind {
			case kindWake: // put it back for the waiters
				p.queue <- e
			case kindSlot: // left unused: take it back (offerSlots may offer it again)
				a.takeBackSlot()
			default:
				a.place(e)
			}
		default:
			return // taken meanwhile
		}
	}
}

// place makes e, which the actor holds, idle; or destroys it if it was made
// before the last Reset, or if the pool holds more objects than its size in
// force (those being destroyed left out).
func (a *actor[T]) place(e *entry[T]) {
	p := a.p
	switch {
	case a.closing || p.closed.Load():
		p.destroy(e, reasonClosed)
	case e.gen != p.retire.Load()>>1:
		p.destroy(e, reasonReset)
	case a.surplus() > 0:
		p.destroy(e, reasonResized)
	case a.reclaim > 0 && len(a.all)-int(p.destroying.Load()) > a.minIdle:
		a.reclaim--
		a.yielding++
		e.reclaimed = true
		p.destroy(e, reasonYielded)
	default:
		p.pushIdle(e)
	}
}

// surplus is how many objects the pool holds beyond its size in force,
// those being destroyed left out.
func (a *actor[T]) surplus() int {
	return a.total - int(a.p.destroying.Load()) - a.maxObjects
}

// publishSurplus sets bit 0 of retire while the pool holds more than its
// size in force, or owes its Reclaimer objects given back, so that
// give-backs come to the actor (place), and clears it once it does not; stored only when it changes: give-backs read it.
// Once set, it looks at the idle objects again: one given back after the
// last look, whose giver read retire before the bit was set (putIdleAt),
// is idle by now.
func (a *actor[T]) publishSurplus() {
	p := a.p
	over := (a.surplus() > 0 || a.reclaim > 0 && a.reclaimInUse) && !a.closing
	if r := p.retire.Load(); over != (r&1 == 1) {
		if over {
			p.retire.Or(1)
			a.retireIdle()
		} else {
			p.retire.And(^uint64(1))
		}
	}
}

// reclaimer attaches the pool to its Budget when that is a Reclaimer; the
// func returned detaches it (nil: nothing to detach).
func (p *Pool[T]) reclaimer() (detach func()) {
	r, ok := p.cfg.Budget.(Reclaimer)
	if !ok {
		return nil
	}
	return r.Attach(func(n int, inUse bool) {
		select {
		case p.mailbox <- message[T]{kind: msgReclaim, p: p, epoch: uint64(max(n, 0)), slot: inUse}:
		case <-p.closing:
		case <-p.done:
		}
	})
}

// onReclaim destroys up to n objects for the Reclaimer (place): idle ones
// now and, with inUse, those given back until n are (publishSurplus sends
// them here). It replaces what was asked before. Those destroyed for an
// earlier ask whose slots the Reclaimer may not have seen given back yet
// count towards n: an ask made before they were must not take them twice.
func (a *actor[T]) onReclaim(n int, inUse bool) {
	if a.closing {
		return
	}
	a.reclaim, a.reclaimInUse = max(n-a.yielding, 0), inUse
	if n > 0 {
		a.retireIdle()
	}
	if !inUse {
		a.reclaim = 0
	}
}
