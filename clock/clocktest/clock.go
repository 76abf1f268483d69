package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/respool/respool/clock"
)

// Clock is a clock.Clock whose time moves only by Advance. It is safe for
// concurrent use.
type Clock struct {
	mu      sync.Mutex // guards the following fields
	now     time.Time
	timers  []*timer      // pending timers and tickers, in no order
	changed chan struct{} // closed and replaced whenever timers is added to
}

// New returns a Clock reading start (a fixed date when start is zero, so
// that times print readably).
func New(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Clock{now: start, changed: make(chan struct{})}
}

var _ clock.Clock = (*Clock)(nil)

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the clock's time minus t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// NewTimer returns a timer that fires when the clock reaches now+d.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// NewTicker returns a ticker that fires every d of the clock's time, from
// now+d on. As with time.Ticker, its channel holds one tick: the ticks that
// fall due while the last one has not been received are dropped. It panics
// if d is not positive, as time.NewTicker does.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clocktest: non-positive interval for NewTicker")
	}
	t := &timer{c: c, ch: make(chan time.Time, 1), period: d}
	t.Reset(d)
	return ticker{t}
}

// AfterFunc returns a timer that calls f when the clock reaches now+d; f
// runs on the goroutine that moved the clock, before Advance returns (in a
// goroutine of its own when d <= 0, as with time.AfterFunc).
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &timer{c: c, f: f}
	t.Reset(d)
	return t
}

// Next returns the earliest deadline of the pending timers and tickers, and
// whether there is one.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for _, t := range c.timers {
		if next.IsZero() || t.when.Before(next) {
			next = t.when
		}
	}
	return next, !next.IsZero()
}

// WaitTimers blocks until at least n timers (tickers included) are pending,
// or ctx ends.
func (c *Clock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		pending, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if pending >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Advance moves the clock forward by d, firing the timers and tickers due on
// the way in the order of their deadlines, each at its own deadline.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	to := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		i := -1
		for j, tm := range c.timers {
			if !tm.when.After(to) && (i < 0 || tm.when.Before(c.timers[i].when)) {
				i = j
			}
		}
		if i < 0 {
			if to.After(c.now) {
				c.now = to
			}
			c.mu.Unlock()
			return
		}
		tm := c.timers[i]
		if tm.when.After(c.now) {
			c.now = tm.when
		}
		now := c.now
		if tm.period > 0 {
			tm.rearmLocked(to)
		} else {
			c.timers = slices.Delete(c.timers, i, i+1)
		}
		c.mu.Unlock()
		if tm.f != nil {
			tm.f()
		} else {
			select {
			case tm.ch <- now:
			default:
			}
		}
	}
}

type timer struct {
	c      *Clock
	ch     chan time.Time // nil for AfterFunc
	f      func()
	period time.Duration // a ticker's; 0 for a timer
	when   time.Time     // guarded by c.mu
}

func (t *timer) C() <-chan time.Time { return t.ch }

// rearmLocked sets a ticker's next deadline, one period after the tick that
// fires now. While its last tick has not been received, the ticks due up to
// to would be dropped, so the deadline skips past them.
func (t *timer) rearmLocked(to time.Time) {
	t.when = t.when.Add(t.period)
	if len(t.ch) > 0 && !t.when.After(to) {
		t.when = t.when.Add((to.Sub(t.when)/t.period + 1) * t.period)
	}
}

// Stop removes the timer and drains its channel, so that no stale time is
// received after it (as with Go 1.23 timers).
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.stopLocked()
}

func (t *timer) stopLocked() bool {
	if t.ch != nil {
		select {
		case <-t.ch:
		default:
		}
	}
	i := slices.Index(t.c.timers, t)
	if i < 0 {
		return false
	}
	t.c.timers = slices.Delete(t.c.timers, i, i+1)
	return true
}

func (t *timer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	active := t.stopLocked()
	t.when = c.now.Add(d)
	if d <= 0 { // due now: fire at once, as the time package does
		if t.f != nil {
			go t.f()
		} else {
			t.ch <- c.now // drained by stopLocked, so never blocks
		}
		return active
	}
	c.timers = append(c.timers, t)
	close(c.changed)
	c.changed = make(chan struct{})
	return active
}

// ticker is a timer that re-arms itself each time it fires.
type ticker struct{ t *timer }

func (t ticker) C() <-chan time.Time { return t.t.ch }
func (t ticker) Stop()               { t.t.Stop() }
