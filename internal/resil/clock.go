package resil

import "github.com/respool/respool/clock"

// ClockOr returns c, or clock.System() when c is nil.
func ClockOr(c clock.Clock) clock.Clock {
	if c == nil {
		return clock.System()
	}
	return c
}

// IsSystem reports whether c reads the real time (nil counts as
// clock.System()), so that a mechanism may take a faster path: read only
// the monotonic clock, recycle its timers, or hand a deadline to the context
// package instead of setting a timer. It never panics, whatever the dynamic
// type of c: an interface comparison compares the types first.
func IsSystem(c clock.Clock) bool { return c == nil || c == clock.System() }
