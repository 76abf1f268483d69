package bulkhead

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Config configures a Bulkhead. The zero value of every field is the
// default written beside it.
type Config struct {
	// Name appears in events and errors.
	Name string
	// MaxConcurrent is how many calls may run at once. Default 25
	// (Resilience4j's).
	MaxConcurrent int
	// QueueSize is how many calls may wait for a slot. Default 0: a call
	// that finds no slot is rejected at once.
	QueueSize int
	// MaxWait is the longest a call waits for a slot. Default 10 seconds.
	MaxWait time.Duration
	// Clock is where time is read and timers set. Nil means clock.System().
	Clock clock.Clock
	// Listener receives EventRejected and EventQueued.
	Listener resilience.Listener
}

// Defaults of the zero Config.
const (
	DefaultMaxConcurrent = 25
	DefaultMaxWait       = 10 * time.Second
)

const mechanism = "bulkhead"

// ErrFull is the reason of a rejection: no slot, and no room or time to
// wait for one.
var ErrFull = errors.New("bulkhead full")

func (c Config) validate() (Config, error) {
	checks := []error{
		resil.Check(c.MaxConcurrent >= 0, mechanism, "MaxConcurrent", c.MaxConcurrent, "a count >= 0 (0: 25)"),
		resil.Check(c.QueueSize >= 0, mechanism, "QueueSize", c.QueueSize, "a count >= 0 (0: no queue)"),
		resil.Check(c.MaxWait >= 0, mechanism, "MaxWait", c.MaxWait, "a duration >= 0 (0: 10s)"),
	}
	if err := resil.FirstError(checks...); err != nil {
		return c, err
	}
	c.MaxConcurrent = cmp.Or(c.MaxConcurrent, DefaultMaxConcurrent)
	c.MaxWait = cmp.Or(c.MaxWait, DefaultMaxWait)
	c.Clock = resil.ClockOr(c.Clock)
	return c, nil
}

// Bulkhead bounds concurrent calls; it is a resilience.Guard. Make one with
// New.
type Bulkhead struct {
	c       Config // validated, defaults filled in; read-only
	inUse   atomic.Int64
	waiting atomic.Int64 // len(waiters), readable without the lock

	mu      sync.Mutex // guards waiters
	waiters []*waiter  // FIFO

	rejected, queued, timedOut atomic.Uint64
}

type waiter struct{ granted chan struct{} } // closed when handed a slot

// New returns a Bulkhead configured by c, or a *resilience.ConfigError.
func New(c Config) (*Bulkhead, error) {
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	return &Bulkhead{c: c}, nil
}

var _ resilience.Guard = (*Bulkhead)(nil)

// tryTake takes a slot if one is free.
func (b *Bulkhead) tryTake() bool {
	for {
		n := b.inUse.Load()
		if n >= int64(b.c.MaxConcurrent) {
			return false
		}
		if b.inUse.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Enter takes a slot, waiting for one in FIFO order when the queue allows,
// at most MaxWait and until ctx ends.
func (b *Bulkhead) Enter(ctx context.Context) (resilience.Permit, error) {
	if b.waiting.Load() == 0 && b.tryTake() {
		return resilience.Permit{}, nil
	}
	return resilience.Permit{}, b.enterSlow(ctx)
}

func (b *Bulkhead) enterSlow(ctx context.Context) error {
	now := b.c.Clock.Now()
	b.mu.Lock()
	if len(b.waiters) == 0 && b.tryTake() {
		b.mu.Unlock()
		return nil
	}
	if len(b.waiters) >= b.c.QueueSize {
		b.mu.Unlock()
		return b.reject(now)
	}
	w := &waiter{granted: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.waiting.Add(1)
	n := len(b.waiters)
	// A slot may have been freed between the failed take and the append.
	b.grantLocked()
	b.mu.Unlock()
	b.queued.Add(1)
	resil.Emit(b.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: b.c.Name,
		Kind: resilience.EventQueued, Waiting: n})

	t := b.c.Clock.NewTimer(b.c.MaxWait)
	defer t.Stop()
	var err error
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-t.C():
		b.timedOut.Add(1)
		err = b.reject(b.c.Clock.Now())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.waiters, w); i >= 0 {
		b.waiters = slices.Delete(b.waiters, i, i+1)
		b.waiting.Add(-1)
		return err
	}
	// Granted meanwhile: give the slot on.
	b.inUse.Add(-1)
	b.grantLocked()
	return err
}

func (b *Bulkhead) reject(now time.Time) error {
	b.rejected.Add(1)
	err := resil.Reject(mechanism, b.c.Name, ErrFull, now, time.Time{})
	resil.Emit(b.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: b.c.Name,
		Kind: resilience.EventRejected, Err: err})
	return err
}

// Exit frees the slot, handing it to the first waiter if there is one.
func (b *Bulkhead) Exit(resilience.Permit, error) {
	b.inUse.Add(-1)
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.grantLocked()
		b.mu.Unlock()
	}
}

// grantLocked hands free slots to waiters, first come first served.
func (b *Bulkhead) grantLocked() {
	for len(b.waiters) > 0 && b.tryTake() {
		w := b.waiters[0]
		b.waiters = slices.Delete(b.waiters, 0, 1)
		b.waiting.Add(-1)
		close(w.granted)
	}
}

// Stats is a snapshot of a Bulkhead.
type Stats struct {
	InUse, Waiting             int
	Rejected, Queued, TimedOut uint64
}

// Stats returns a snapshot.
func (b *Bulkhead) Stats() Stats {
	return Stats{InUse: int(b.inUse.Load()), Waiting: int(b.waiting.Load()),
		Rejected: b.rejected.Load(), Queued: b.queued.Load(), TimedOut: b.timedOut.Load()}
}
