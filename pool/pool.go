package pool

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/respool/respool/factory"
	"github.com/respool/respool/internal/leaktrack"
)

// Pool is a pool of objects of type T made by a factory.Factory. It is safe
// for concurrent use.
type Pool[T any] struct {
	cfg      Config // with defaults; immutable
	sysClock bool   // cfg.Clock is SystemClock
	factory  factory.Factory[T]

	// Idle objects live in idle's shards (one per P, roughly) and in queue.
	// queue is also the wait queue: waiting callers block receiving from it,
	// so an object sent to it goes to the caller that has waited longest.
	// Both can hold every entry, and queue the wake marker besides, so a push
	// or a send never blocks.
	idle  idleSet[T]
	queue chan *entry[T]

	// wake is the wake marker: an entry that is never handed out, sent to
	// queue (by postWake) to wake the longest waiter when a slot is free or
	// the pool is closing, so that it asks for a creation or returns
	// ErrClosed. There is one, so queue holds at most one marker; wakeOut
	// is set while it is in queue or held by whoever received it.
	wake    *entry[T]
	wakeOut atomic.Bool

	mailbox chan message[T] // to the actor
	closing chan struct{}   // closed by Close
	done    chan struct{}   // closed by the actor when the last object is gone
	closed  atomic.Bool     // set by Close before closing is closed

	// Gauges written only by the actor (destroying: +1 by the destroyer, -1
	// by the actor); read by anyone.
	total      atomic.Int64 // entries alive or being created
	creating   atomic.Int64
	testing    atomic.Int64
	destroying atomic.Int64

	// waiting counts callers in takeSlow; written by them. It is on its
	// own cache line: the fast path reads it on every Take and GiveBack.
	_       [cacheLine]byte
	waiting atomic.Int64
	_       [cacheLine - 8]byte

	counters  counters
	waitStats []waitStats // one per idle shard

	// now is the pool's time in unix nanos, advanced by the actor each tick.
	now atomic.Int64

	baseCtx    context.Context // cancelled by Close: ends creations and tests
	cancelBase context.CancelFunc
	wg         sync.WaitGroup // every goroutine the pool starts
	closeOnce  sync.Once
}

// New starts a pool and its actor. It returns a *ConfigError if cfg is not
// valid. The pool starts creating MinIdle objects in the background.
func New[T any](f factory.Factory[T], cfg Config) (*Pool[T], error) {
	return newPool(f, cfg, nil)
}

// newPool is New with a hook that the actor calls after each event (tests).
func newPool[T any](f factory.Factory[T], cfg Config, hook func(string)) (*Pool[T], error) {
	if err := checkFactory(f); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Pool[T]{
		cfg:     cfg,
		factory: f,
		queue:   make(chan *entry[T], cfg.MaxObjects+1), // every entry and the marker
		wake:    new(entry[T]),
		mailbox: make(chan message[T], mailboxSize),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.idle.init(cfg.MaxObjects)
	p.waitStats = make([]waitStats, len(p.idle.shards))
	_, p.sysClock = cfg.Clock.(SystemClock)
	p.now.Store(nanos(cfg.Clock.Now()))
	p.baseCtx, p.cancelBase = context.WithCancel(context.Background())
	a := newActor(p, hook)
	go a.run()
	return p, nil
}

// checkFactory refuses a factory that cannot make objects: nil, or a
// factory.Funcs without CreateFunc (which would fail every Take).
func checkFactory[T any](f factory.Factory[T]) error {
	noCreate := &ConfigError{Field: "factory", Value: "factory.Funcs without CreateFunc", Reason: "CreateFunc is required"}
	switch f := f.(type) {
	case nil:
		return &ConfigError{Field: "factory", Value: nil, Reason: "must not be nil"}
	case factory.Funcs[T]:
		if f.CreateFunc == nil {
			return noCreate
		}
	case *factory.Funcs[T]:
		if f == nil || f.CreateFunc == nil {
			return noCreate
		}
	}
	return nil
}

// Config returns the pool's configuration with defaults filled in.
func (p *Pool[T]) Config() Config { return p.cfg }

// Take returns an idle object that passes Validate; failing that it asks for
// a new one when the pool is below MaxObjects, and waits in FIFO order for
// an object. It fails at once with ctx's error when ctx has already ended
// (whether or not an object is idle), with a *QueueFullError (errors.Is
// ErrQueueFull) when MaxQueueSize callers already wait, with ErrClosed once
// the pool is closed, with ctx's error when ctx ends first (the object it may
// have caused to be created goes to the next caller), and with a *CreateError
// when the creation it asked for fails.
func (p *Pool[T]) Take(ctx context.Context) (Handle[T], error) {
	if err := ctx.Err(); err != nil { // an atomic load for the standard contexts
		return Handle[T]{}, err
	}
	if e := p.takeIdle(); e != nil {
		h, err, ok := p.handOut(e)
		if ok && err == nil {
			return h, nil
		}
		p.counters.untaken.Add(1)
		if ok {
			return h, err
		}
	}
	return p.takeSlow(ctx)
}

// takeIdle returns an idle entry, or nil. It looks first in the calling P's
// shard, then in the others, then in queue. While callers wait it returns
// nil, so that a newcomer does not overtake them: it queues up behind them.
func (p *Pool[T]) takeIdle() *entry[T] {
	if p.waiting.Load() != 0 {
		return nil
	}
	h := p.idle.getHint()
	e := p.idle.take(h)
	if e == nil {
		if e = p.takeQueued(); e != nil {
			p.waitStats[h.i&p.idle.mask].queueTakes.Add(1)
		}
	}
	p.idle.putHint(h)
	return e
}

// takeQueued returns an entry from queue without waiting, or nil.
func (p *Pool[T]) takeQueued() *entry[T] {
	select {
	case e := <-p.queue:
		if e == p.wake { // meant for a waiter: put it back
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
		if e := p.takeIdle(); e != nil {
			h, err, ok := p.handOut(e)
			if ok && err == nil {
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
		if p.total.Load() < int64(p.cfg.MaxObjects) {
			select {
			case p.mailbox <- message[T]{kind: msgTake}:
			default: // the actor is busy; a later TryTake asks again
			}
		}
		return Handle[T]{}, ErrNoIdleObject
	}
}

// handOut turns an entry received from idle into a Handle. ok is false when
// the entry failed Validate and was destroyed: the caller looks again.
func (p *Pool[T]) handOut(e *entry[T]) (h Handle[T], err error, ok bool) {
	if p.closed.Load() {
		p.destroy(e, DestroyClosed)
		return Handle[T]{}, ErrClosed, true
	}
	if p.factory.Validate(e.obj) != nil {
		p.destroy(e, DestroyInvalid)
		return Handle[T]{}, nil, false
	}
	return p.lend(e), nil, true
}

// lend marks e as out and returns its Handle; e must be held by the caller
// (received from idle or delivered by the actor).
func (p *Pool[T]) lend(e *entry[T]) Handle[T] {
	lc := &p.cfg.Leak
	// takenAt and site are stored before the lease changes, so the actor's
	// hold-time scan never pairs a new lease with an old time.
	if lc.HoldThreshold > 0 {
		e.takenAt.Store(p.now.Load())
	}
	if lc.CaptureStack {
		e.site.Store(leaktrack.Capture(3))
	}
	h := Handle[T]{e: e, lease: e.lease.Add(1)}
	h.token, e.token = e.token, nil
	return h
}

// GiveBack returns h's object to the pool: it is validated, then handed to
// the caller that has waited longest, or kept idle. An object that fails
// Validate or has outlived its lifetime is destroyed. Giving back twice
// returns ErrAlreadyReturned, a Handle from elsewhere ErrForeignHandle; the
// pool is unharmed by either.
func (p *Pool[T]) GiveBack(h Handle[T]) error {
	e, err := p.claim(h)
	if err != nil {
		return err
	}
	switch {
	case p.factory.Validate(e.obj) != nil:
		p.destroy(e, DestroyInvalid)
	case e.expiresAt != 0 && p.now.Load() >= e.expiresAt:
		p.destroy(e, DestroyLifetime)
	default:
		p.putIdle(e)
	}
	return nil
}

// Discard destroys h's object instead of giving it back: use it for an
// object found broken. Its slot is freed for a new object.
func (p *Pool[T]) Discard(h Handle[T]) error {
	e, err := p.claim(h)
	if err != nil {
		return err
	}
	p.destroy(e, DestroyDiscarded)
	return nil
}

// claim ends h's lease, so that exactly one GiveBack, Discard or leak
// reclaim wins.
func (p *Pool[T]) claim(h Handle[T]) (*entry[T], error) {
	e := h.e
	if e == nil || e.pool != p {
		return nil, ErrForeignHandle
	}
	if !e.lease.CompareAndSwap(h.lease, h.lease+1) {
		return nil, ErrAlreadyReturned
	}
	// Using h.token after the swap keeps it reachable until the lease has
	// ended, so the leak detector cannot reclaim the object under us.
	e.token = h.token
	return e, nil
}

// putIdle makes e idle, which hands it to the longest waiter if there is one.
func (p *Pool[T]) putIdle(e *entry[T]) {
	e.idleSince = p.now.Load()
	p.pushIdle(e)
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
		p.queue <- e // never blocks: cap(queue) == MaxObjects+1 > entries alive
	} else {
		p.idle.shards[e.home&p.idle.mask].push(e)
		if p.waiting.Load() != 0 {
			p.flushToQueue()
		}
	}
	if p.closed.Load() {
		// Close may have drained idle before our push: drain it again, so
		// that none is left behind.
		p.drainClosed()
	}
}

// flushToQueue moves every entry in the shards to queue, where waiting
// callers get them in FIFO order.
func (p *Pool[T]) flushToQueue() {
	for i := range p.idle.shards {
		s := &p.idle.shards[i]
		for e := s.pop(); e != nil; e = s.pop() {
			p.queue <- e // never blocks
		}
	}
}

// drainClosed destroys every idle entry (the pool is closed).
func (p *Pool[T]) drainClosed() {
	for i := range p.idle.shards {
		s := &p.idle.shards[i]
		for e := s.pop(); e != nil; e = s.pop() {
			p.destroy(e, DestroyClosed)
		}
	}
	wake := false
	for {
		select {
		case e := <-p.queue:
			if e == p.wake {
				wake = true // put back below, for the waiters still to wake
				continue
			}
			p.destroy(e, DestroyClosed)
		default:
			if wake {
				p.queue <- p.wake
			}
			return
		}
	}
}

// idleCount is the number of idle entries: those in the shards and in
// queue.
func (p *Pool[T]) idleCount() int {
	m, _ := p.idle.counts()
	return m + p.queuedEntries()
}

// queuedEntries is the number of entries in queue, not counting the marker
// (it may be off by one while the marker is held).
func (p *Pool[T]) queuedEntries() int {
	n := len(p.queue)
	if n > 0 && p.wakeOut.Load() {
		n--
	}
	return n
}

// wakeIfNeeded sends the wake marker to queue when a caller waits and may
// have to act: the pool is below MaxObjects (it should ask for a creation)
// or is closed. The actor calls it after every event. Callers count
// themselves in waiting (or clear wakeOut) before they look at closed and
// total, and the actor (Close) stores total (closed) before this load of
// waiting, so a caller that looked too early to see the change is counted
// here (see takeSlow).
func (p *Pool[T]) wakeIfNeeded() {
	if (p.closed.Load() || p.total.Load() < int64(p.cfg.MaxObjects)) && p.waiting.Load() > 0 {
		p.postWake()
	}
}

// postWake sends the marker to queue unless it is already out.
func (p *Pool[T]) postWake() {
	if p.wakeOut.CompareAndSwap(false, true) {
		p.queue <- p.wake // never blocks: queue has room for every entry and the one marker
	}
}

// watchLeaks gives e a leak token, watched for e's whole life.
func (p *Pool[T]) watchLeaks(e *entry[T]) {
	if p.cfg.Leak.Disabled {
		return
	}
	e.token = new(leaktrack.Token)
	leaktrack.Watch(e.token, e, p.reclaimLost)
}

// reclaimLost runs on the runtime's cleanup goroutine once e's token has
// been collected. The pool holds the token whenever the object is in it, so
// if the object is out, every copy of its Handle is lost: it is reported and
// destroyed. Otherwise e was destroyed and this is a no-op.
func (p *Pool[T]) reclaimLost(e *entry[T]) {
	lease := e.lease.Load()
	if lease&1 == 0 || !e.lease.CompareAndSwap(lease, lease+1) {
		return
	}
	p.counters.leaks.Add(1)
	leaktrack.LogLost(p.cfg.Logger, p.cfg.Name, e.site.Load())
	p.destroy(e, DestroyLeaked)
}

// destroy destroys e in a new goroutine and tells the actor when it is done,
// freeing e's slot. The caller must own e.
func (p *Pool[T]) destroy(e *entry[T], why DestroyReason) {
	e.token = nil // let the token, and with it e, be collected
	p.destroying.Add(1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := p.factory.Destroy(e.obj); err != nil {
			p.cfg.Logger.Warn("destroy failed", "pool", p.cfg.Name, "reason", why.String(), "error", err)
		}
		p.counters.destroys[why].Add(1)
		p.mailbox <- message[T]{kind: msgDestroyed, e: e} // the actor runs until this arrives
	}()
}

// StartClose begins closing the pool, as Close does, and returns at once:
// new Takes fail with ErrClosed, waiting callers are released with it, idle
// objects are destroyed, and objects still out are destroyed as they come
// back (or, when their Handle is lost, as the leak detector finds them).
// Close waits for the end of it.
func (p *Pool[T]) StartClose() {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		close(p.closing)
	})
}

// Close stops the pool (see StartClose) and waits until every object is
// gone. It returns nil then, or ctx's error, wrapped with how many objects
// remain, if ctx ends first; calling it again waits again.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.StartClose()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pool: close: %s still alive (%d in use): %w",
			count(p.total.Load(), "object"), p.Stats().InUse, ctx.Err())
	}
}

// addSat returns the sum of now and the non-negative ds, saturated at
// math.MaxInt64 (never reached), so that a lifetime of math.MaxInt64 means
// forever instead of overflowing into the past.
func addSat(now int64, ds ...int64) int64 {
	for _, d := range ds {
		if now > math.MaxInt64-d {
			return math.MaxInt64
		}
		now += d
	}
	return now
}

// jitter returns a random duration in [0, d).
func jitter(d int64) int64 {
	if d <= 0 {
		return 0
	}
	return rand.Int64N(d)
}
