package pool

import (
	"sync"
	"time"
)

// Clock is the pool's source of time. Tests inject a clock they move by hand.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker that fires every d.
	NewTicker(d time.Duration) Ticker
	// NewTimer returns a timer that fires once, after d.
	NewTimer(d time.Duration) Timer
}

// Ticker is the part of *time.Ticker the pool uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Timer is the part of *time.Timer the pool uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// SystemClock is the Clock of the time package.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker.
func (SystemClock) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

// NewTimer returns a time.Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

// timers recycles the *time.Timer of SystemClock waits, so that a bounded
// wait allocates nothing (since Go 1.23 a stopped timer's channel holds no
// stale value, so Reset is safe).
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// startTimer starts a timer of d on the pool's clock; stop it with the
// returned function.
func (p *Pool[T]) startTimer(d time.Duration) (c <-chan time.Time, stop func()) {
	if !p.sysClock {
		t := p.cfg.Clock.NewTimer(d)
		return t.C(), func() { t.Stop() }
	}
	t := timers.Get().(*time.Timer)
	t.Reset(d)
	return t.C, func() {
		t.Stop()
		timers.Put(t)
	}
}

// monoEpoch is the reference of clock's readings with SystemClock.
var monoEpoch = time.Now()

// clock reads the pool's time, in nanoseconds, on which everything is
// measured: waits, hold times, lifetimes, idle times (the actor's ticks store
// a reading in Pool.now, the coarse clock that give-backs read for free).
// With SystemClock it is time.Since of a fixed time, which reads only the
// monotonic clock (time.Now reads the wall clock too): about 25 ns, a third
// of time.Now's cost. Otherwise it is Clock.Now in Unix nanoseconds.
func (p *Pool[T]) clock() int64 { return readClock(p.sysClock, p.cfg.Clock) }

// readClock is clock for a Clock c, which is SystemClock when sys is set.
func readClock(sys bool, c Clock) int64 {
	if sys {
		return int64(time.Since(monoEpoch))
	}
	return c.Now().UnixNano()
}

// clockOf converts t to a reading of the pool's clock (see clock). With
// SystemClock it uses t's monotonic reading when it has one, as the
// deadlines of context.WithTimeout do.
func (p *Pool[T]) clockOf(t time.Time) int64 {
	if p.sysClock {
		return int64(t.Sub(monoEpoch))
	}
	return t.UnixNano()
}

// timeAt converts a reading of the pool's clock to a time.Time, for errors
// and Stats; zero stays zero.
func (p *Pool[T]) timeAt(c int64) time.Time {
	switch {
	case c == 0:
		return time.Time{}
	case p.sysClock:
		return monoEpoch.Add(time.Duration(c))
	}
	return time.Unix(0, c)
}
