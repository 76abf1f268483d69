package pool

import (
	"sync"
	"time"

	"github.com/respool/respool/clock"
)

// timers recycles the *time.Timer of the system clock's waits, so that a bounded
// wait allocates nothing (since Go 1.23 a stopped timer's channel holds no
// stale value, so Reset is safe).
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// waitTimer is the timer of a bounded wait on the pool's clock: a recycled
// *time.Timer on the system clock, so that starting and stopping it
// allocates nothing, or else a Timer of the pool's Clock. The zero value is
// no timer: its C is nil and stop does nothing.
type waitTimer struct {
	sys   *time.Timer
	other clock.Timer
}

// startTimer starts a timer of d on the pool's clock; stop it with stop.
func (p *Pool[T]) startTimer(d time.Duration) waitTimer {
	if !p.sysClock {
		return waitTimer{other: p.cfg.Clock.NewTimer(d)}
	}
	t := timers.Get().(*time.Timer)
	t.Reset(d)
	return waitTimer{sys: t}
}

// C is the channel on which the timer fires.
func (w waitTimer) C() <-chan time.Time {
	switch {
	case w.sys != nil:
		return w.sys.C
	case w.other != nil:
		return w.other.C()
	}
	return nil
}

// stop stops the timer and recycles a system one.
func (w waitTimer) stop() {
	switch {
	case w.sys != nil:
		w.sys.Stop()
		timers.Put(w.sys)
	case w.other != nil:
		w.other.Stop()
	}
}

// monoEpoch is the reference of clock's readings with the system clock.
var monoEpoch = time.Now()

// clock reads the pool's time, in nanoseconds, on which everything is
// measured: waits, hold times, lifetimes, idle times (the actor's ticks store
// a reading in Pool.now, the coarse clock that give-backs read for free).
// With clock.System() it is time.Since of a fixed time, which reads only the
// monotonic clock (time.Now reads the wall clock too): about 25 ns, a third
// of time.Now's cost. Otherwise it is Clock.Now in Unix nanoseconds.
func (p *Pool[T]) clock() int64 { return readClock(p.sysClock, p.cfg.Clock) }

// readClock is clock for a Clock c, which is clock.System() when sys is set.
func readClock(sys bool, c clock.Clock) int64 {
	if sys {
		return int64(time.Since(monoEpoch))
	}
	return c.Now().UnixNano()
}

// clockOf converts t to a reading of the pool's clock (see clock). With
// the system clock it uses t's monotonic reading when it has one, as the
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
