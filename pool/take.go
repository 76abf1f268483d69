package pool

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/respool/respool/internal/leaktrack"
)

// Take returns an idle object that passes Validate; failing that it asks for
// a new one when the pool is below its effective size, and otherwise waits
// in FIFO order for an object to be given back. It fails at once with ctx's
// error when ctx has already ended (whether or not an object is idle), with
// a queue-full error (errors.Is ErrQueueFull) when the pool is full and
// MaxQueueSize callers already wait for a give-back, with an
// *OverloadError (errors.Is ErrOverloaded) when the overload policy finds
// it cannot be served in time, with a *CreateError (FailedFast) when
// creations fail and it cannot wait for the next attempt, and with
// ErrClosed once the pool is closed. While waiting it fails with ctx's
// error or an error matching ErrAcquireTimeout when its wait ends (the object it may
// have caused to be created goes to the next caller; while creations fail,
// wrapped in a *WaitError naming the last failure) and with a *CreateError
// when the creation it waited for fails.
func (p *Pool[T]) Take(ctx context.Context) (Handle[T], error) {
	if o := p.observer.Load(); o != nil {
		return p.takeObserved(ctx, o)
	}
	return p.take(ctx)
}

// takeObserved is Take telling o of its wait (and, with Taking, of its
// beginning and end), and noting the take for the hold GiveBack tells o of
// (see observeTaken).
func (p *Pool[T]) takeObserved(ctx context.Context, o *Observer) (h Handle[T], err error) {
	if o.Taking != nil {
		var end func(error)
		ctx, end = o.Taking(ctx, int(p.waiting.Load()))
		defer func() { end(err) }()
	}
	start := p.clock()
	if h, err = p.take(ctx); err != nil {
		return h, err
	}
	now := p.clock()
	p.observeTaken(h, now)
	if o.Wait != nil {
		o.Wait(time.Duration(now - start))
	}
	return h, nil
}

// observeTaken notes that h was taken at now under an Observer, for the
// hold its give-back tells the Observer of (see claim): only a lease so
// noted is told, so that a lease taken before Observe, or an old time,
// is never.
func (p *Pool[T]) observeTaken(h Handle[T], now int64) {
	if p.cfg.HoldThreshold == 0 { // else lend stored it, before the lease changed (see lend)
		h.e.takenAt.Store(now)
	}
	h.e.observedLease.Store(h.lease)
}

// take is Take.
func (p *Pool[T]) take(ctx context.Context) (Handle[T], error) {
	if err := ctx.Err(); err != nil { // an atomic load for the standard contexts
		return Handle[T]{}, err
	}
	// An idle object that fails its checks is destroyed and the next one
	// tried, so that a set of dead idle objects costs one creation, not one
	// per object asked for while the others wait in queue.
	for e := p.takeIdle(); e != nil; e = p.takeIdle() {
		if e.kind == kindSlot { // a free slot: make an object with it
			return p.takeSlow(ctx, e)
		}
		h, err, ok := p.handOut(ctx, e, 0)
		if ok && err == nil {
			return h, nil
		}
		p.counters.untaken.Add(1)
		if ok {
			return h, err
		}
	}
	return p.takeSlow(ctx, nil)
}

// takeIdle returns an idle entry or a slot marker, or nil. It looks first in
// the calling P's shard, then in the others, then in queue. While callers
// wait it returns nil, so that a newcomer does not overtake them: it queues
// up behind them.
func (p *Pool[T]) takeIdle() *entry[T] {
	if p.waiting.Load() != 0 {
		return nil
	}
	h := p.idle.getHint()
	e := p.idle.take(h)
	if e == nil {
		if e = p.takeQueued(); e != nil && e.kind == kindObject {
			p.waitStats[h.i&p.idle.mask].queueTakes.Add(1)
		}
	}
	p.idle.putHint(h)
	return e
}

// takeQueued returns an entry or slot marker from queue without waiting, or
// nil.
func (p *Pool[T]) takeQueued() *entry[T] {
	select {
	case e := <-p.queue:
		if e.kind == kindWake { // meant for a waiter: put it back
			p.queue <- e
			return nil
		}
		return e
	default:
		return nil
	}
}

// TryTake returns an idle object at once, or ErrNoIdleObject. When none is
// idle and the pool is below MaxObjects it starts a creation, so that a later
// TryTake may succeed.
func (p *Pool[T]) TryTake() (Handle[T], error) {
	for {
		e := p.takeIdle()
		if e != nil && e.kind == kindSlot { // create an object for whoever comes next
			p.send(message[T]{kind: msgTake, slot: true}) // the slot keeps the actor running
			return Handle[T]{}, ErrNoIdleObject
		}
		if e != nil {
			h, err, ok := p.handOut(context.Background(), e, 0)
			if ok && err == nil {
				if o := p.observer.Load(); o != nil {
					p.observeTaken(h, p.clock())
					if o.Wait != nil {
						o.Wait(0) // an idle object, at once
					}
				}
				return h, nil
			}
			p.counters.untaken.Add(1)
			if ok {
				return h, err
			}
			continue
		}
		if p.closed.Load() {
			return Handle[T]{}, ErrClosed
		}
		if p.total.Load() < p.capacity.Load() {
			select {
			case p.mailbox <- message[T]{kind: msgTake, p: p}:
			default: // the actor is busy; a later TryTake asks again
			}
		}
		return Handle[T]{}, ErrNoIdleObject
	}
}

// handOut turns an entry received from idle into a Handle for the caller
// whose context is ctx. ok is false when the entry failed Validate or was
// rejected by BeforeHandOut, and was destroyed: the caller looks again.
// now is a clock reading, or 0 if the caller has none.
func (p *Pool[T]) handOut(ctx context.Context, e *entry[T], now int64) (h Handle[T], err error, ok bool) {
	if p.closed.Load() {
		p.destroy(e, reasonClosed)
		return Handle[T]{}, ErrClosed, true
	}
	if e.gen != p.retire.Load()>>1 { // made before a Reset: never handed out after it
		p.destroy(e, reasonReset)
		return Handle[T]{}, nil, false
	}
	if !p.valid(e.obj) {
		p.destroy(e, reasonInvalid)
		return Handle[T]{}, nil, false
	}
	if now == 0 && (e.expiresAt != 0 || p.cfg.HoldThreshold > 0) { // read only when a limit needs it
		now = p.clock()
	}
	if e.expiresAt != 0 && now >= e.expiresAt { // never hand out an expired object
		p.destroy(e, reasonLifetime)
		return Handle[T]{}, nil, false
	}
	if p.f.BeforeHandOut != nil {
		if err := p.beforeHandOut(ctx, e); err != nil {
			p.destroy(e, reasonRejected)
			if err := ctx.Err(); err != nil {
				return Handle[T]{}, err, true // the caller's context ended the check
			}
			return Handle[T]{}, nil, false
		}
	}
	return p.lend(e, now), nil, true
}

// beforeHandOut runs the BeforeHandOut hook on e with the caller's context,
// bounded by TestTimeout: a context that cannot end gets a shared bound,
// which costs no timer (handOutBound).
func (p *Pool[T]) beforeHandOut(ctx context.Context, e *entry[T]) error {
	if ctx.Done() == nil {
		return p.f.BeforeHandOut(p.handOutBound(ctx), e.obj)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.TestTimeout)
	defer cancel()
	return p.f.BeforeHandOut(ctx, e.obj)
}

// lend marks e as out and returns its Handle; e must be held by the caller
// (received from idle or delivered by the actor). now is a clock reading,
// or 0 if the caller has none.
func (p *Pool[T]) lend(e *entry[T], now int64) Handle[T] {
	c := &p.cfg
	// takenAt and site are stored before the lease changes, so the actor's
	// hold-time scan never pairs a new lease with an old time. takenAt is
	// a real clock reading, so that hold times are true to the take.
	if c.HoldThreshold > 0 {
		if now == 0 {
			now = p.clock()
		}
		e.takenAt.Store(now)
	}
	if c.LeakCaptureStack {
		e.site.Store(leaktrack.Capture(3))
	}
	h := Handle[T]{e: e, lease: e.lease.Add(1)}
	if !c.LeakTrackingDisabled {
		h.token = p.newToken(e, h.lease)
	}
	return h
}

// waiter is a caller that asked the actor for a new object. The actor hands
// the outcome over through reply, after winning state from waiting to
// delivered; the caller leaves by winning it from waiting to gone.
type waiter[T any] struct {
	state    atomic.Int32
	claim    atomic.Int32    // in a Keyed: whether its request waits as a claim for the budget, counted (see budget.go)
	reply    chan created[T] // buffered 1; receives exactly once if delivered
	ctx      context.Context // the caller's: its values reach the creation; immutable
	deadline int64           // when the caller's wait ends (pool clock), by its context or AcquireTimeout; 0: never; immutable
}

const (
	waiterWaiting int32 = iota
	waiterDelivered
	waiterGone
)

// The states of waiter.claim.
const (
	claimNone    int32 = iota // not counted in the budget's waiting
	claimCounted              // counted
	claimLeft                 // its caller has left: never to be counted
)

// created is the outcome of a request for a creation: an entry, an error,
// or full (no slot was free: the caller waits for a give-back instead).
type created[T any] struct {
	e    *entry[T]
	err  error
	full bool
}

func newWaiter[T any](ctx context.Context, deadline int64) *waiter[T] {
	return &waiter[T]{reply: make(chan created[T], 1), ctx: ctx, deadline: deadline}
}

// deliver hands r to w if w still waits; the actor calls it.
func (w *waiter[T]) deliver(r created[T]) bool {
	if !w.state.CompareAndSwap(waiterWaiting, waiterDelivered) {
		return false
	}
	w.reply <- r
	return true
}

// leave withdraws w. If the actor already delivered, it returns that outcome
// (which the caller must then consume) and true.
func (w *waiter[T]) leave() (created[T], bool) {
	if w.state.CompareAndSwap(waiterWaiting, waiterGone) {
		return created[T]{}, false
	}
	return <-w.reply, true
}

// takeSlow waits for an object: one given back (or created for nobody in
// particular), or one from a creation this caller asked for. slot, when not
// nil, is a slot marker the caller found: it asks for a creation with it.
// See markers.go for how waiters, slots and markers work together.
func (p *Pool[T]) takeSlow(ctx context.Context, slot *entry[T]) (Handle[T], error) {
	if p.closed.Load() {
		if slot != nil {
			p.returnSlots(1)
		}
		return Handle[T]{}, ErrClosed
	}
	n := p.waiting.Add(1)
	defer p.stopWaiting()
	// Now that we count in waiting, every entry pushed to a shard from here
	// on is flushed to queue by its pusher; flush those already there. Only
	// the first of a run of waiters (waiting was 0) has to: an entry is
	// pushed to a shard only by a pusher that read waiting as 0, that is,
	// before the first waiter of the run counted itself, and that pusher
	// either flushes it (its second read of waiting sees a waiter) or
	// pushed it before the first waiter's flush looked at the shard (see
	// pushIdle). Later waiters of the run find the shards empty, or being
	// flushed.
	if n == 1 {
		p.flushToQueue()
	}
	t := taker[T]{p: p, ctx: ctx, done: ctx.Done(), slot: slot != nil, start: p.clock()}
	if dl, ok := ctx.Deadline(); ok {
		t.deadline = p.clockOf(dl)
		t.waitDeadline = t.deadline
	}
	if d := p.cfg.AcquireTimeout; d > 0 {
		tm := p.startTimer(d)
		defer tm.stop()
		t.timeout = tm.C()
		if end := addSat(t.start, int64(d)); t.waitDeadline == 0 || end < t.waitDeadline {
			t.waitDeadline = end
		}
	}
	h, err := t.wait()
	t.leave()
	t.shedTimer.stop()
	return h, err
}

// taker is one caller in takeSlow: what it holds while it waits.
type taker[T any] struct {
	p       *Pool[T]
	ctx     context.Context
	done    <-chan struct{}  // ctx.Done()
	timeout <-chan time.Time // fires at AcquireTimeout; nil without one
	start   int64            // clock at the start of the wait
	w       *waiter[T]       // its request for a creation, while it has one
	queued  bool             // counted in p.queued: waiting for a give-back
	slot    bool             // holds a slot marker it has not used yet
	full    bool             // the actor answered full: wait for a give-back, do not ask again

	// Deadlines on the pool's clock (0: none): the context's, which bounds
	// the work done with the object too, and the wait's (the context's or
	// AcquireTimeout's, whichever comes first).
	deadline, waitDeadline int64

	// The overload policy's verdict (see overload.go): judged under
	// overload, and CoDel's bound on the wait.
	overloaded bool
	ahead      int // callers queued before it when it joined them
	shedAfter  time.Duration
	shed       <-chan time.Time
	shedTimer  waitTimer
}

func (t *taker[T]) wait() (Handle[T], error) {
	p := t.p
	for {
		if p.closed.Load() {
			return Handle[T]{}, ErrClosed
		}
		if err := t.ask(); err != nil {
			return Handle[T]{}, err
		}
		var e *entry[T]
		var r created[T]
		replied := false
		if t.w == nil && t.done == nil && t.timeout == nil && t.shed == nil {
			e = <-p.queue // nothing else can end this wait
		} else {
			var reply chan created[T]
			if t.w != nil {
				reply = t.w.reply
			}
			select {
			case e = <-p.queue:
			case r = <-reply:
				replied = true
			case <-t.done:
				return Handle[T]{}, t.cancelled()
			case <-t.timeout:
				return Handle[T]{}, t.timedOut()
			case <-t.shed:
				return Handle[T]{}, t.shedByCoDel()
			}
		}
		if replied {
			t.w = nil // answered: nothing to withdraw
			switch {
			case r.err != nil:
				if ce, ok := r.err.(*CreateError); ok && ce.FailedFast {
					p.counters.failedFast.Add(1)
				}
				return Handle[T]{}, r.err
			case r.full:
				t.full = true // no slot after all: wait for a give-back
				continue
			}
			now := p.clock()
			h := p.lend(r.e, now)
			p.lentAt(r.e, h, now)
			p.observeWait(t.start, now)
			return h, nil
		}
		switch e.kind {
		case kindWake: // the pool is closing
			p.wakeOut.Store(false)
			continue
		case kindSlot:
			t.slot = true
			continue
		}
		t.leave() // served by a give-back: withdraw the rest
		now := p.clock()
		p.sampleHold(e, now)
		if err := t.atTurn(e, now); err != nil {
			return Handle[T]{}, err
		}
		h, err, ok := p.handOut(t.ctx, e, now)
		if !ok {
			continue // destroyed: look again
		}
		if err == nil {
			p.lentAt(e, h, now)
			p.observeWait(t.start, now)
		}
		return h, err
	}
}

// ask makes sure the caller is in line: with a creation of its own (asked
// with a slot marker it holds, or because the pool is below MaxObjects and
// nobody waits for a give-back), or queued for a give-back. It fails when
// the queue is full, the context ends or the pool closes.
func (t *taker[T]) ask() error {
	p := t.p
	if t.slot {
		t.slot = false
		if t.w != nil { // it has a creation coming already: the slot is another's
			p.returnSlots(1)
			return nil
		}
		t.unqueue()
		t.w = newWaiter[T](t.ctx, t.waitDeadline)
		p.send(message[T]{kind: msgTake, w: t.w, slot: true}) // the slot keeps the actor running
		return nil
	}
	if t.w != nil || t.queued {
		return nil
	}
	if !t.full && p.queued.Load() == 0 && p.total.Load() < p.capacity.Load() {
		w := newWaiter[T](t.ctx, t.waitDeadline)
		select {
		case p.mailbox <- message[T]{kind: msgTake, w: w, p: p}:
			t.w = w
			return nil
		case <-p.done:
			return ErrClosed
		case <-t.done:
			return t.cancelled()
		case <-t.timeout:
			return t.timedOut()
		}
	}
	t.full = false
	n := p.queued.Add(1)
	t.queued = true
	waiting, full := n, p.total.Load() >= p.capacity.Load()
	if b := p.keyed; b != nil { // one queue limit for every key
		waiting, full = b.queue(1), full || b.full()
	}
	if waiting > int64(p.cfg.MaxQueueSize) && full {
		t.unqueue()
		p.counters.queueFull.Add(1)
		return &queueFullError{Waiting: int(waiting - 1), MaxQueueSize: p.cfg.MaxQueueSize, MaxObjects: p.maxObjectsNow()}
	}
	if err := t.admit(int(n - 1)); err != nil {
		t.unqueue()
		p.refused()
		return err
	}
	if p.total.Load() < p.capacity.Load() {
		p.poke() // a slot freed meanwhile: see markers.go
	}
	return nil
}

// cancelled counts and returns the end of a wait by the caller's context.
func (t *taker[T]) cancelled() error {
	t.p.counters.cancelled.Add(1)
	return t.p.whileFailing(t.ctx.Err())
}

// timedOut counts and returns the end of a wait by AcquireTimeout.
func (t *taker[T]) timedOut() error {
	p := t.p
	p.counters.acquireTimeout.Add(1)
	return p.whileFailing(&acquireTimeoutError{Bound: p.cfg.AcquireTimeout, MaxObjects: p.maxObjectsNow(), Waiting: int(p.waiting.Load())})
}

// whileFailing wraps err, the end of a wait, in a *WaitError naming the
// last creation failure when creations are failing.
func (p *Pool[T]) whileFailing(err error) error {
	f := p.failure.Load()
	if f == nil || f.failures == 0 {
		return err
	}
	return &WaitError{Err: err, LastCreateErr: f.err, Failures: f.failures, RetryAt: p.timeAt(f.retryAt)}
}

func (t *taker[T]) unqueue() {
	if t.queued {
		t.queued = false
		if b := t.p.keyed; b != nil {
			b.queue(-1)
		}
		if t.p.queued.Add(-1) == 0 {
			t.p.queueEmptied()
		}
	}
}

// leave gives up what the caller still holds: its creation request (an
// object created for it meanwhile goes to idle, and so to the next caller),
// its place in queued, an unused slot marker.
func (t *taker[T]) leave() {
	p := t.p
	if t.w != nil {
		if r, ok := t.w.leave(); ok && r.e != nil {
			p.putIdle(r.e)
		}
		if b := p.keyed; b != nil {
			b.unclaim(t.w) // its place in the queue is free at once
		}
		t.w = nil
	}
	t.unqueue()
	if t.slot {
		t.slot = false
		p.returnSlots(1)
	}
}

// stopWaiting uncounts a caller leaving takeSlow and passes the close marker
// on if others wait.
func (p *Pool[T]) stopWaiting() {
	if p.waiting.Add(-1) == 0 && p.keyed != nil {
		p.keyed.lastLeft(p)
	}
	p.wakeIfNeeded()
}

// observeWait counts a successful Take that had to wait from start to now
// (clock readings).
func (p *Pool[T]) observeWait(start, now int64) {
	d := time.Duration(now - start)
	h := p.idle.getHint()
	p.waitStats[h.i&p.idle.mask].observe(d)
	p.idle.putHint(h)
}
