package pool

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/internal/resil"
)

// Pool is a pool of objects of type T made by a Factory. It is safe for
// concurrent use.
type Pool[T any] struct {
	cfg      Config     // with defaults; immutable
	sysClock bool       // cfg.Clock is clock.System()
	f        Factory[T] // a copy; immutable

	// retire is what a give-back and a hand-out compare an entry with:
	// the count of Resets (retire>>1), which an entry made before the last
	// one does not carry (entry.gen), and in bit 0 whether the pool holds
	// more objects than its size in force (a Resize shrank it), while which
	// give-backs go to the actor. Reset adds 2; the actor sets and clears
	// bit 0 (see resize.go).
	retire atomic.Uint64
	// size is the size in force, MaxObjects<<32 | MinIdle: cfg's, or the
	// last Resize's. Written by Resize (under resizeMu), read by the actor
	// and Stats.
	size     atomic.Uint64
	resizeMu sync.Mutex

	// Idle objects live in idle's shards (one per P, roughly) and in queue.
	// queue is also the wait queue: waiting callers block receiving from it,
	// so an object sent to it goes to the caller that has waited longest.
	// Both can hold every entry, and queue the markers besides, so a push or
	// a send never blocks (see markers.go).
	idle  idleSet[T]
	queue chan *entry[T]

	// wake is the close marker: sent to queue (by postWake) to wake the
	// longest waiter once the pool is closed, so that it returns ErrClosed
	// and passes the marker on. wakeOut is set while it is in queue or held
	// by whoever received it.
	wake    *entry[T]
	wakeOut atomic.Bool

	mailbox      chan message[T] // to the actor
	closing      chan struct{}   // closed by Close
	closeStarted chan struct{}   // closed by the actor once it has begun closing
	done         chan struct{}   // closed by the actor when the last object is gone
	closed       atomic.Bool     // set by Close before closing is closed

	// Gauges written only by the actor (destroying: +1 by the destroyer, -1
	// by the actor); read by anyone.
	total      atomic.Int64 // slots taken: entries alive or being created, slots reserved or offered
	creating   atomic.Int64
	testing    atomic.Int64
	destroying atomic.Int64
	offered    atomic.Int64 // slot markers offered and not yet used or returned
	checking   atomic.Int64 // objects under their AfterGiveBack hook; written by anyone

	// waiting counts callers in takeSlow; written by them. It is on its
	// own cache line: the fast path reads it on every Take and GiveBack.
	_       [cacheLine]byte
	waiting atomic.Int64
	_       [cacheLine - 8]byte

	// queued counts the callers in takeSlow that wait for an object to be
	// given back (not for a creation of their own): MaxQueueSize bounds it,
	// and the actor offers them the slots that free up. Written by them.
	queued atomic.Int64

	// capacity is how many slots callers may take now: the effective size
	// (limit), plus one while back-pressure lets a probe grow it. Both are
	// written by the actor (see creation.go).
	capacity atomic.Int64
	limit    atomic.Int64
	// failure is the state of creations for callers and Stats: the last
	// failure, and how many in a row; written by the actor.
	failure atomic.Pointer[failureRecord]

	overload overloadState // the overload policy's measurements; written by waiting callers

	// observer, when set (Observe), is told each Take's wait, each
	// creation's run and each object's hold as they end.
	observer atomic.Pointer[Observer]

	// keyed is the budget of the Keyed this pool is one key of, whose actor
	// and mailbox it shares; nil for a Pool of its own. yields is set by
	// that actor while this key's give-backs go to it, to be destroyed for
	// another key's callers (see budget.go).
	keyed  *budget[T]
	yields atomic.Bool

	counters  counters
	waitStats []waitStats // one per idle shard

	// now is the pool's coarse time (a clock reading), advanced by the actor
	// each tick.
	now atomic.Int64

	baseCtx    context.Context // cancelled by Close: ends creations and tests
	cancelBase context.CancelFunc
	bound      atomic.Pointer[sharedBound] // see handOutBound
	wg         sync.WaitGroup              // every goroutine the pool starts
	closeOnce  sync.Once

	detachReclaim func() // detaches the pool from its Budget when that is a Reclaimer (nil: not)
}

// New starts a pool of the objects f makes and its actor. It returns a
// *resilience.ConfigError (Mechanism "pool") naming the field if cfg is not
// valid or f has no Create. The pool starts
// creating MinIdle objects in the background.
func New[T any](f Factory[T], cfg Config) (*Pool[T], error) {
	return newPool(f, cfg, nil)
}

// newPool is New with a hook that the actor calls after each event (tests).
func newPool[T any](f Factory[T], cfg Config, hook func(string)) (*Pool[T], error) {
	p, err := buildPool(f, cfg, nil)
	if err != nil {
		return nil, err
	}
	a := newActor(p, hook)
	go a.run()
	p.notifyGC()
	p.detachReclaim = p.reclaimer()
	return p, nil
}

// buildPool validates f and cfg and makes a pool that no actor runs yet.
// b, when not nil, is the budget of the Keyed the pool is a key of: the pool
// shares its mailbox, and its actor is run by the budget's.
func buildPool[T any](f Factory[T], cfg Config, b *budget[T]) (*Pool[T], error) {
	if err := resil.FirstError(
		resil.Check(f.Create != nil, mechanism, "Factory.Create", "nil", "a function: Create is required"),
		cfg.validate(),
	); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Pool[T]{
		cfg:          cfg,
		f:            f,
		queue:        make(chan *entry[T], cfg.MaxObjects+1), // see markers.go
		wake:         &entry[T]{kind: kindWake},
		keyed:        b,
		closing:      make(chan struct{}),
		closeStarted: make(chan struct{}),
		done:         make(chan struct{}),
	}
	p.size.Store(packSize(cfg.MaxObjects, cfg.MinIdle))
	p.capacity.Store(int64(cfg.MaxObjects))
	p.limit.Store(int64(cfg.MaxObjects))
	p.idle.init(cfg.MaxObjects)
	p.waitStats = make([]waitStats, len(p.idle.shards))
	p.sysClock = resil.IsSystem(cfg.Clock)
	p.now.Store(p.clock())
	p.baseCtx, p.cancelBase = context.WithCancel(context.Background())
	if b != nil {
		p.mailbox = b.mailbox
	} else {
		p.mailbox = make(chan message[T], mailboxSize)
	}
	return p, nil
}

// valid reports whether obj passes the factory's Validate: no call at all
// when it is nil.
func (p *Pool[T]) valid(obj T) bool { return p.f.Validate == nil || p.f.Validate(obj) == nil }

// Config returns the pool's configuration with defaults filled in.
func (p *Pool[T]) Config() Config { return p.cfg }

// destroy destroys e in a new goroutine and tells the actor when it is done,
// freeing e's slot. The caller must own e.
func (p *Pool[T]) destroy(e *entry[T], why destroyReason) {
	p.destroying.Add(1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.destroyObject(e.obj, e.release, why)
		p.send(message[T]{kind: msgDestroyed, e: e}) // the actor runs until this arrives
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
		p.emit(Event{Kind: EventClosing}, true)
		close(p.closing)
		if p.detachReclaim != nil {
			p.detachReclaim()
		}
		if p.keyed != nil {
			p.keyed.keyClosing(p)
		}
	})
}

// Close stops the pool (see StartClose) and waits until every object is
// gone, those of creations and tests it gave up on included (a factory that
// ignores its context holds Close until it returns). It returns nil then, or
// ctx's error, wrapped with how many objects remain, if ctx ends first;
// calling it again waits again.
//
// With leak tracking on, Close runs garbage collections while objects are
// still out (at once, then less and less often, at most once a second), so
// that Handles lost without GiveBack are found and their objects destroyed
// instead of holding Close up until ctx ends.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.StartClose()
	inUse := func() int { return p.Stats().InUse }
	if err := awaitClosed(ctx, !p.cfg.LeakTrackingDisabled, p.closeStarted, p.done, inUse); err != nil {
		return p.closeError(ctx)
	}
	return nil
}

// awaitClosed waits until done is closed, and returns nil, or until ctx
// ends, and returns its error. With leak tracking on (collect), once started
// is closed (the actor has watched every lease out), it runs garbage
// collections while inUse() > 0, at once and then less and less often (at
// most once a second), so that Handles lost without GiveBack are found.
func awaitClosed(ctx context.Context, collect bool, started, done <-chan struct{}, inUse func() int) error {
	if collect {
		select {
		case <-started:
		case <-done:
		case <-ctx.Done():
		}
		t := time.NewTimer(0)
		defer t.Stop()
		for pause := time.Millisecond; ; pause = min(2*pause, time.Second) {
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				if inUse() > 0 {
					runtime.GC()
				}
				t.Reset(pause)
			}
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeError says what is left when ctx ended Close's wait.
func (p *Pool[T]) closeError(ctx context.Context) error {
	return fmt.Errorf("pool: close: %s still alive (%d in use): %w",
		count(p.total.Load(), "object"), p.Stats().InUse, ctx.Err())
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
