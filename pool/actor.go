package pool

import (
	"context"
	"errors"
	"time"
)

type msgKind uint8

const (
	msgTake      msgKind = iota // a caller wants an object created (w nil: for nobody in particular; slot: with a slot it holds)
	msgSlot                     // a slot marker handed back unused
	msgPoke                     // a queued caller saw a free slot: offer it
	msgCreated                  // a creation ended (obj or err)
	msgTested                   // an idle object's Test ended (e, err)
	msgDestroyed                // an object has been destroyed (e)
	msgAbandoned                // a hook on e outlived its bound: forget e, keep its slot until msgLate
	msgGC                       // a garbage collection ended: watch the leases out
	msgYield                    // a Keyed's key gives e back while other keys' callers wait for the budget (see budget.go)
	msgAddKey                   // a Keyed's key p joins its budget
	msgLate                     // a call given up on (creation, test of e, hook on e) has ended, its object destroyed: free its slot
	msgRetire                   // a Reset or a Resize: look at the idle objects, and at the size in force
	msgSurplus                  // e is given back while the pool holds more than its size in force, or owes its Reclaimer objects
	msgReclaim                  // the Reclaimer asks for epoch objects back (slot: those given back too)
)

// mailboxSize is the actor's mailbox capacity. The actor never sends to its
// own mailbox, so any size is free of deadlock; senders wait while the actor
// catches up.
const mailboxSize = 256

// message is what the actor receives. It is sent by value, so sending one
// allocates nothing.
type message[T any] struct {
	kind      msgKind
	p         *Pool[T] // the sender's pool (see Pool.send); a Keyed's actor routes by it
	slot      bool     // msgTake: the sender brings a slot marker
	abandoned bool     // msgCreated, msgTested: the call outlived its bound and still runs (msgLate follows)
	epoch     uint64   // msgCreated: the gate's epoch when the creation started
	gen       uint64   // msgCreated: the count of Resets when the creation started
	took      int64    // msgCreated: how long the creation ran (pool clock)
	release   func()   // msgCreated: gives back the object's slot of Config.Budget (nil: none)
	w         *waiter[T]
	e         *entry[T]
	obj       T
	err       error
}

// actor owns the pool's decisions. Every field here is touched only by the
// actor goroutine; the atomics on Pool that mirror them are written only by it.
type actor[T any] struct {
	p *Pool[T]
	// pending are the requests for a creation not started yet, oldest
	// first: waiting for MaxConcurrentCreates, or for the gate while
	// creations fail (see creation.go).
	pending    []request[T]
	gate       createGate
	all        map[*entry[T]]struct{} // every entry alive (idle, out, tested, being destroyed)
	total      int                    // slots taken: entries alive, creations in flight or pending, slot markers offered
	offered    int                    // slot markers offered and not yet used or handed back
	creating   int
	anon       int // creations in flight or pending for nobody in particular (MinIdle, TryTake)
	testing    int
	lastTick   int64       // pool time of the previous tick
	nextHome   int         // home shard of the next entry created (round robin)
	batch      []*entry[T] // the tick's scratch list
	closing    bool
	needRefill bool // an event freed a slot or an idle object: refill to MinIdle

	// Calls given up on at their bound that still run, each holding its
	// slot until it ends (msgLate): creations, and tests and hooks.
	lateCreates, lateTests int

	// In a Keyed: the claims for a slot of the budget made for the key's
	// queued callers, and the budget's scratch count of those to drop;
	// whether a TryTake's claim waits (see budget.go).
	claimed, excessClaims int
	tryClaimed            bool

	// maxObjects and minIdle are the size in force (Pool.size), as the
	// actor last read it.
	maxObjects, minIdle int
	// reclaim is how many objects the pool's Reclaimer asked for back and
	// has not had yet (place destroys them); reclaimInUse, whether objects
	// given back count too, not only those idle (see onReclaim).
	reclaim      int
	reclaimInUse bool
	yielding     int // objects destroyed for the Reclaimer whose destruction (and slot's release) has not ended
	// resets is the count of Resets (Pool.retire>>1) the actor last acted
	// on (onRetire).
	resets uint64
	// createTime is the mean run of the creations that succeeded (a moving
	// average, the newest weighing 1/holdWeight), in clock units; 0 until
	// one has.
	createTime int64

	hook func(string) // tests only: called after each event is handled
}

func newActor[T any](p *Pool[T], hook func(string)) *actor[T] {
	a := &actor[T]{p: p, all: make(map[*entry[T]]struct{}), lastTick: p.now.Load(), hook: hook}
	a.maxObjects, a.minIdle = p.sizeNow()
	a.gate.limit = a.maxObjects
	return a
}

func (a *actor[T]) run() {
	p := a.p
	ticker := p.cfg.Clock.NewTicker(p.cfg.ValidationInterval)
	defer ticker.Stop()
	defer a.release() // stops the gate's timer
	a.refill()
	closing := p.closing
	for {
		var ev string
		select {
		case m := <-p.mailbox:
			ev = a.handle(m)
		case <-ticker.C():
			a.tick(p.clock())
			ev = "tick"
		case <-a.gate.timerC:
			a.onRetryDue()
			ev = "retry"
		case <-closing:
			closing = nil // handled once
			a.startClose()
			ev = "close"
		}
		a.settle()
		if a.hook != nil {
			a.hook(ev)
		}
		if a.closing && a.total == 0 {
			p.wg.Wait() // every pool goroutine has sent its last message
			p.emit(Event{Kind: EventClosed}, true)
			close(p.done)
			return
		}
	}
}

// settle does what follows every event. Any event may have freed a slot:
// the queued callers come first, then MinIdle. And once closed, wake the
// waiting callers. capacity is stored before offerSlots loads queued, as
// total is (see markers.go), and again once refill has taken slots.
func (a *actor[T]) settle() {
	a.publishCapacity()
	a.offerSlots()
	if a.needRefill {
		a.needRefill = false
		a.refill()
	}
	a.publishCapacity()
	a.publishSurplus()
	a.p.wakeIfNeeded()
}

func (a *actor[T]) handle(m message[T]) string {
	switch m.kind {
	case msgTake:
		a.onTake(m.w, m.slot)
		return "take"
	case msgSlot:
		a.takeBackSlot()
		return "slot"
	case msgPoke:
		return "poke"
	case msgCreated:
		if m.err == nil {
			a.createTook(m.took)
			if o := a.p.observer.Load(); o != nil && o.Create != nil {
				o.Create(time.Duration(m.took))
			}
		}
		a.onCreated(m.w, m.obj, m.release, m.err, m.epoch, m.gen, m.abandoned)
		return "created"
	case msgTested:
		a.onTested(m.e, m.err, m.abandoned)
		return "tested"
	case msgDestroyed:
		a.onDestroyed(m.e)
		return "destroyed"
	case msgAbandoned:
		a.abandon(m.e)
		return "abandoned"
	case msgLate:
		a.onLate(m.e)
		return "late"
	case msgGC:
		a.watchLeases()
		return "gc"
	case msgRetire:
		a.onRetire()
		return "retire"
	case msgSurplus:
		a.place(m.e)
		return "surplus"
	case msgReclaim:
		a.onReclaim(int(m.epoch), m.slot)
		return "reclaim"
	}
	return "unknown"
}

// onTake handles a request for a creation: w's, or one for nobody in
// particular (TryTake) when w is nil. With slot, the sender brings a slot
// marker; otherwise the request takes a free slot, or, for a caller, is
// answered full when there is none. While creations fail, the gate decides
// (see creation.go).
func (a *actor[T]) onTake(w *waiter[T], slot bool) {
	p, g := a.p, &a.gate
	if slot {
		a.offered--
		p.offered.Store(int64(a.offered))
	}
	if a.closing {
		if slot {
			a.freeSlot()
		}
		if w != nil {
			w.deliver(created[T]{err: ErrClosed})
		}
		return
	}
	// A pause ends at its retry time even if the actor has not handled its
	// timer yet (a Take and the timer can be ready at once): the request
	// then waits for the attempt the timer starts, as in hopeless.
	paused := g.pauseErr != nil && p.clock() < g.retryAt
	if paused || (g.failing && w == nil) { // nothing to make now
		if slot {
			a.freeSlot()
		}
		if w != nil {
			a.failFast(w, g.pauseErr)
		}
		return
	}
	if w == nil && !slot { // TryTake: one object on its way, or one idle, is enough
		if a.anon > 0 || p.idleCount() > 0 {
			return
		}
		if !a.canCreate() {
			if b := p.keyed; b != nil && a.mayCreate() { // only the budget is spent
				b.tryClaim(a)
			}
			return
		}
		slot = true
		a.setTotal(a.total + 1)
	}
	if g.failing { // requests wait without a slot (see creation.go)
		if slot {
			a.freeSlot()
		}
		switch {
		case a.total >= a.capacity():
			w.deliver(created[T]{full: true})
		case a.hopeless():
			a.failFast(w, g.lastErr)
		default:
			a.pending = append(a.pending, request[T]{w: w})
			a.startCreates()
		}
		return
	}
	if !slot {
		if a.total >= a.capacity() {
			w.deliver(created[T]{full: true})
			return
		}
		if !a.budgetFree() { // a Keyed's other keys hold the budget
			a.p.keyed.starve(a, w)
			return
		}
		a.setTotal(a.total + 1)
	}
	if w == nil {
		a.anon++
	}
	a.pending = append(a.pending, request[T]{w: w, reserved: true})
	a.startCreates()
}

// startCreates starts the pending creations, as far as the gate and
// MaxConcurrentCreates allow. A caller that left before its creation started
// gives its slot up; a request without a slot takes one, or, when none is
// free, its caller is told to wait for a give-back.
func (a *actor[T]) startCreates() {
	for len(a.pending) > 0 {
		r := a.pending[0]
		gone := r.w != nil && r.w.state.Load() != waiterWaiting
		if !gone && !a.mayStart() {
			return
		}
		a.pending[0] = request[T]{}
		a.pending = a.pending[1:]
		switch {
		case gone:
			if r.reserved {
				a.freeSlot()
			}
		case !r.reserved && a.total >= a.capacity():
			r.w.deliver(created[T]{full: true})
		case !r.reserved && !a.budgetFree():
			a.p.keyed.starve(a, r.w)
		default:
			if !r.reserved {
				a.setTotal(a.total + 1)
			}
			a.startCreate(r.w)
		}
	}
}

// canCreate reports whether a slot is free and a creation for nobody in
// particular may start now (callers waiting for the gate come first).
func (a *actor[T]) canCreate() bool { return a.mayCreate() && a.budgetFree() }

// mayCreate is canCreate but for a Keyed's budget.
func (a *actor[T]) mayCreate() bool {
	return a.mayStart() && a.total < a.capacity() && !(a.gate.failing && len(a.pending) > 0)
}

// createForNobody takes a slot and creates an object for nobody in
// particular with it (a TryTake's claim granted).
func (a *actor[T]) createForNobody() {
	a.setTotal(a.total + 1)
	a.anon++
	a.pending = append(a.pending, request[T]{reserved: true})
	a.startCreates()
}

// budgetFree reports whether the budget of the Keyed the pool is a key of
// has a slot free; always true for a Pool of its own.
func (a *actor[T]) budgetFree() bool {
	b := a.p.keyed
	return b == nil || b.total < b.max
}

// freeSlot gives a slot up. total is stored before offerSlots loads queued
// (see markers.go).
func (a *actor[T]) freeSlot() {
	a.setTotal(a.total - 1)
	a.needRefill = true
}

// takeBackSlot frees the slot of a slot marker handed back unused (the
// actor may offer it again at once).
func (a *actor[T]) takeBackSlot() {
	a.offered--
	a.p.offered.Store(int64(a.offered))
	a.freeSlot()
}

// offerSlots offers each free slot to the callers queued for a give-back,
// one slot marker per caller not offered one yet. The longest waiter gets
// the first (see markers.go).
func (a *actor[T]) offerSlots() {
	for !a.closing && a.total < a.capacity() && a.budgetFree() && int(a.p.queued.Load()) > a.offered {
		a.offerSlot()
	}
}

// offerSlot takes a free slot and offers it to the queued callers.
func (a *actor[T]) offerSlot() {
	p := a.p
	a.setTotal(a.total + 1)
	a.offered++
	p.offered.Store(int64(a.offered))
	p.queue <- &entry[T]{kind: kindSlot} // never blocks: see markers.go
}

// startCreate creates an object for w (nil: for idle) in a slot already
// taken. The creation runs with the values of w's context but outlives it:
// it is bounded by CreateTimeout and by Close only (see goBounded).
func (a *actor[T]) startCreate(w *waiter[T]) {
	p := a.p
	a.creating++
	a.publishBusy()
	epoch, gen, start := a.gate.epoch, p.retire.Load()>>1, p.clock()
	parent := context.Background()
	if w != nil && w.ctx != nil {
		parent = context.WithoutCancel(w.ctx)
	}
	type result struct {
		obj     T
		err     error
		release func() // the slot of Config.Budget the object holds
	}
	goBounded(p, parent, p.cfg.CreateTimeout, "create",
		func(ctx context.Context) (r result) {
			var end func(error)
			if o := p.observer.Load(); o != nil && o.Creating != nil {
				ctx, end = o.Creating(ctx)
				defer func() { end(r.err) }()
			}
			if b := p.cfg.Budget; b != nil {
				if r.release, r.err = b.Acquire(ctx); r.err != nil {
					return r // nothing is created without a slot
				}
			}
			r.obj, r.err = p.f.Create(ctx)
			if r.err == nil && p.f.AfterCreate != nil {
				if r.err = p.f.AfterCreate(ctx, r.obj); r.err != nil {
					p.destroyLate(r.obj, r.release, reasonRejected) // never an entry
					r.release = nil
				}
			} else if r.err != nil && r.release != nil {
				r.release()
				r.release = nil
			}
			return r
		},
		func(r result, errBound error) {
			if errBound != nil {
				r.err = errBound
			}
			p.send(message[T]{kind: msgCreated, w: w, obj: r.obj, err: r.err, epoch: epoch, gen: gen, abandoned: errBound != nil,
				took: p.clock() - start, release: r.release})
		},
		func(r result) {
			if r.err == nil {
				p.destroyLate(r.obj, r.release, reasonLate)
			}
			p.lateEnded(nil)
		})
}

// askAgain puts w, if it still waits, back in pending, the creation made
// for it having been made across a Reset: it gets a slot of its own if one
// is free, else it queues for a give-back (full).
func (a *actor[T]) askAgain(w *waiter[T]) {
	if w != nil && w.state.Load() == waiterWaiting {
		a.pending = append(a.pending, request[T]{w: w})
	}
}

// onCreated handles the end of a creation for w (nil: for nobody). With
// abandoned, the creation was given up on at its bound and still runs: it
// keeps its slot until it ends (msgLate).
//
// An object whose creation started before the last Reset is destroyed, a
// failure of such a creation is not counted against the server (no
// backoff, no hold), and w, if it still waits, asks again (see resize.go).
func (a *actor[T]) onCreated(w *waiter[T], obj T, release func(), err error, epoch, gen uint64, abandoned bool) {
	p := a.p
	a.creating--
	if abandoned {
		a.lateCreates++
	}
	a.publishBusy()
	if w == nil {
		a.anon--
	}
	defer a.startCreates()
	if err != nil {
		if !abandoned {
			a.freeSlot()
		}
		if a.closing {
			return // cancelled by Close; its caller has been told ErrClosed
		}
		if !errors.Is(err, ErrBudgetExhausted) { // the factory was not called
			p.counters.createFailures.Add(1)
		}
		if gen != p.retire.Load()>>1 {
			// Started before the last Reset: its failure says nothing of
			// what the Reset was for (a failover, new credentials), and
			// holds no creation.
			a.askAgain(w)
			return
		}
		a.createFailed(w, err, epoch)
		return
	}
	p.counters.creates.Add(1)
	e := &entry[T]{obj: obj, pool: p, home: a.nextHome, gen: gen, release: release}
	a.nextHome = (a.nextHome + 1) & p.idle.mask
	if lt := p.cfg.MaxLifetime; lt > 0 {
		// A clock read, not the coarse now, which may be an interval old.
		e.expiresAt = addSat(p.clock(), int64(lt), jitter(int64(p.cfg.MaxLifetimeJitter)))
	}
	a.all[e] = struct{}{}
	a.createSucceeded(w)
	switch {
	case a.closing:
		p.destroy(e, reasonClosed)
	case gen != p.retire.Load()>>1: // made across a Reset
		p.destroy(e, reasonReset)
		a.askAgain(w)
	case w != nil && w.deliver(created[T]{e: e}):
	default:
		e.idleSince = p.now.Load()
		p.pushIdle(e)
	}
}

func (a *actor[T]) onTested(e *entry[T], err error, abandoned bool) {
	a.testing--
	a.publishBusy()
	switch {
	case abandoned: // Test still runs: its goroutine destroys the object
		a.abandon(e)
	case a.closing:
		a.p.destroy(e, reasonClosed)
	case err != nil:
		a.p.destroy(e, reasonTestFailed)
	default:
		a.place(e)
	}
}

// abandon drops e, whose object the goroutine of a test or hook the pool
// gave up on will destroy; e's slot stays taken until then (onLate).
func (a *actor[T]) abandon(e *entry[T]) {
	delete(a.all, e)
	a.lateTests++
	a.publishBusy()
}

// onLate frees the slot of a call given up on that has ended, its object
// destroyed: a test or hook on e, or a creation when e is nil.
func (a *actor[T]) onLate(e *entry[T]) {
	if e == nil {
		a.lateCreates--
	} else {
		a.lateTests--
	}
	a.publishBusy()
	a.freeSlot()
}

// publishBusy stores the creations and tests under way for Stats, those
// given up on included: their objects exist, or may.
func (a *actor[T]) publishBusy() {
	a.p.creating.Store(int64(a.creating + a.lateCreates))
	a.p.testing.Store(int64(a.testing + a.lateTests))
}

func (a *actor[T]) onDestroyed(e *entry[T]) {
	if e.reclaimed {
		a.yielding--
	}
	delete(a.all, e)
	a.p.destroying.Add(-1)
	a.freeSlot()
}

func (a *actor[T]) setTotal(n int) {
	if b := a.p.keyed; b != nil {
		b.setTotal(b.total + n - a.total)
	}
	a.total = n
	a.p.total.Store(int64(n))
}

// tick advances the pool's time and does the periodic work: destroy idle
// objects past MaxIdle or their lifetime, test those idle for a whole
// interval, report handles held too long, refill to MinIdle.
func (a *actor[T]) tick(now int64) {
	p := a.p
	p.now.Store(now)
	prev := a.lastTick
	a.lastTick = now
	if a.closing {
		return
	}
	maxIdle := int64(p.cfg.MaxIdle)
	idleLeft := p.idleCount()
	// Each shard, then queue, is looked at once. A shard is emptied in one
	// go (the other shards stay available) and its kept entries are pushed
	// back oldest first, keeping its order; queue's entries are taken one at
	// a time. An entry pushed back into queue (callers wait) may be looked at
	// again, with the same outcome: kept.
	for i := range p.idle.shards {
		// Oldest first, so that kept entries go back in their order.
		a.batch = p.idle.shards[i].drainInto(a.batch[:0])
		for _, e := range a.batch {
			idleLeft = a.tickEntry(e, now, prev, maxIdle, idleLeft)
		}
		clear(a.batch)
	}
	for n := len(p.queue); n > 0; n-- {
		var e *entry[T]
		select {
		case e = <-p.queue:
			switch e.kind {
			case kindWake: // put it back for the waiters
				p.queue <- e
				continue
			case kindSlot: // left unused: take it back (offerSlots may offer it again)
				a.takeBackSlot()
				continue
			}
		default:
			n = 1 // taken meanwhile
			continue
		}
		idleLeft = a.tickEntry(e, now, prev, maxIdle, idleLeft)
	}
	a.reportHeld(now)
	a.watchLeases()
	a.flushFailureLog(now)
	a.needRefill = true
}

// tickEntry decides what the tick does with the idle entry e and returns
// idleLeft, the idle entries not destroyed.
func (a *actor[T]) tickEntry(e *entry[T], now, prev, maxIdle int64, idleLeft int) int {
	p := a.p
	e.lentAt = 0 // idle: see flushToQueue
	switch {
	case e.gen != p.retire.Load()>>1: // given back across a Reset
		idleLeft--
		p.destroy(e, reasonReset)
	case a.surplus() > 0: // more than a Resize allows
		idleLeft--
		p.destroy(e, reasonResized)
	case e.expiresAt != 0 && now >= e.expiresAt:
		idleLeft--
		p.destroy(e, reasonLifetime)
	case maxIdle > 0 && now-e.idleSince >= maxIdle && idleLeft > a.minIdle:
		idleLeft--
		p.destroy(e, reasonIdle)
	case e.idleSince < prev: // idle through the whole last interval
		a.startTest(e)
	default:
		p.pushIdle(e)
	}
	return idleLeft
}

// startTest tests e, which the actor has taken out of idle so that nobody
// can take it meanwhile. The pool bounds the Test by TestTimeout and Close
// itself: past them it gives up on the object, which is destroyed when Test
// returns; its slot is freed then (see goBounded).
func (a *actor[T]) startTest(e *entry[T]) {
	p := a.p
	a.testing++
	a.publishBusy()
	goBounded(p, context.Background(), p.cfg.TestTimeout, "test",
		func(ctx context.Context) error {
			var err error
			if p.f.Test != nil {
				err = p.f.Test(ctx, e.obj)
			}
			if err == nil {
				err = ctx.Err() // a Test that ignored its deadline still failed it
			}
			return err
		},
		func(err, errBound error) {
			if errBound != nil {
				p.send(message[T]{kind: msgTested, e: e, err: errBound, abandoned: true})
				return
			}
			p.send(message[T]{kind: msgTested, e: e, err: err})
		},
		func(error) {
			p.destroyLate(e.obj, e.release, reasonTestFailed)
			p.lateEnded(e)
		})
}

// reportHeld reports, once per lease, each object held past HoldThreshold.
func (a *actor[T]) reportHeld(now int64) {
	p := a.p
	threshold := p.cfg.HoldThreshold
	if threshold <= 0 {
		return
	}
	for e := range a.all {
		lease := e.lease.Load()
		if lease&1 == 0 || e.heldReported == lease {
			continue
		}
		if held := now - e.takenAt.Load(); held >= int64(threshold) {
			e.heldReported = lease
			p.counters.held.Add(1)
			p.emit(Event{Kind: EventHeldTooLong, Held: time.Duration(held), Threshold: threshold, TakenAt: e.site.Load().String()}, true)
		}
	}
}

// refill starts creations until MinIdle objects are idle, under test (and
// so idle again soon) or on their way.
func (a *actor[T]) refill() {
	for a.p.idleCount()+a.testing+a.anon < a.minIdle && a.canCreate() {
		a.setTotal(a.total + 1)
		a.anon++
		a.startCreate(nil)
	}
}

func (a *actor[T]) startClose() {
	p := a.p
	a.closing = true
	a.watchLeases() // so that the collections Close runs find every lost Handle
	close(p.closeStarted)
	p.cancelBase()
	a.release()
	for _, r := range a.pending { // nothing will be made
		if r.w == nil {
			a.anon--
		} else {
			r.w.deliver(created[T]{err: ErrClosed})
		}
		if r.reserved {
			a.freeSlot()
		}
	}
	clear(a.pending)
	a.pending = nil
	for range p.drainClosed() {
		a.takeBackSlot()
	}
	// The run loop then wakes the waiting callers (wakeIfNeeded).
}
