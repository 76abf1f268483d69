package resilience

import "time"

// Clock is where a mechanism reads the time and sets its timers. System is
// the real one; clocktest.Clock is moved by hand in tests.
type Clock interface {
	Now() time.Time
	// Since returns the time elapsed since t. The system clock reads only
	// its monotonic clock for it, which costs half of Now.
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc returns a timer that calls f in its own goroutine once d
	// has passed; its C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer the mechanisms use.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset makes the timer fire once d has passed from now.
	Reset(d time.Duration) bool
}

// System is the Clock of the time package.
var System Clock = systemClock{}

// ClockOr returns c, or System when c is nil.
func ClockOr(c Clock) Clock {
	if c == nil {
		return System
	}
	return c
}

type systemClock struct{}

func (systemClock) Now() time.Time                  { return time.Now() }
func (systemClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (systemClock) NewTimer(d time.Duration) Timer  { return systemTimer{time.NewTimer(d)} }
func (systemClock) AfterFunc(d time.Duration, f func()) Timer {
	return systemTimer{time.AfterFunc(d, f)}
}

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// IsSystem reports whether c reads the real time, so that a mechanism may
// hand a deadline to the context package instead of setting a timer.
func IsSystem(c Clock) bool {
	_, ok := c.(systemClock)
	return ok || c == nil
}
