package clock

import "time"

// Clock is a source of time and timers. A nil Clock in any respool Config
// means System().
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns the time elapsed since t. The system clock reads only
	// its monotonic clock for it, which costs half of Now.
	Since(t time.Time) time.Duration
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that sends the time on its channel every
	// d; d must be positive.
	NewTicker(d time.Duration) Ticker
	// AfterFunc returns a timer that calls f in its own goroutine once d
	// has passed; its C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer that respool uses.
type Timer interface {
	// C is the channel on which the time is sent when the timer fires; nil
	// for a timer of AfterFunc.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did. No
	// stale time is received from C after Stop (as with Go 1.23 timers).
	Stop() bool
	// Reset makes the timer fire once d has passed from now; it reports
	// whether the timer was active.
	Reset(d time.Duration) bool
}

// Ticker is the part of *time.Ticker that respool uses.
type Ticker interface {
	// C is the channel on which the ticks are sent.
	C() <-chan time.Time
	// Stop turns the ticker off.
	Stop()
}

// System returns the clock of package time. It returns the same comparable
// value every time, so that code may compare a Clock with System() to take
// a faster path (the pool does: it then reads only the monotonic clock and
// recycles its timers).
func System() Clock { return system{} }

// system is the clock of package time. It must stay a comparable zero-size
// struct (never a pointer or a func): System() == System() is how callers
// recognise it.
type system struct{}

func (system) Now() time.Time                   { return time.Now() }
func (system) Since(t time.Time) time.Duration  { return time.Since(t) }
func (system) NewTimer(d time.Duration) Timer   { return sysTimer{time.NewTimer(d)} }
func (system) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }
func (system) AfterFunc(d time.Duration, f func()) Timer {
	return sysTimer{time.AfterFunc(d, f)}
}

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time        { return t.t.C }
func (t sysTimer) Stop() bool                 { return t.t.Stop() }
func (t sysTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type sysTicker struct{ t *time.Ticker }

func (t sysTicker) C() <-chan time.Time { return t.t.C }
func (t sysTicker) Stop()               { t.t.Stop() }
