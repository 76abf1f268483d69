package breaker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
)

// Mode is how the breaker decides to reject.
type Mode uint8

// The modes.
const (
	Threshold Mode = iota // a state machine over a sliding window of outcomes
	Adaptive              // Google SRE client-side throttling
)

// WindowKind is the kind of sliding window.
type WindowKind uint8

// The kinds of window.
const (
	CountWindow WindowKind = iota // the last WindowSize calls
	TimeWindow                    // the calls of the last WindowDuration
)

// Config configures a Breaker. The zero value of every field is the default
// written beside it.
type Config struct {
	// Name appears in events and errors.
	Name string
	// Mode: Threshold (default) or Adaptive.
	Mode Mode
	// Window is the kind of sliding window (Threshold mode). Default
	// CountWindow.
	Window WindowKind
	// WindowSize is the count window's size in calls. Default 100.
	WindowSize int
	// WindowDuration is the time window's span, and the adaptive mode's.
	// Default 1 minute (adaptive: 2 minutes, as in the SRE book).
	WindowDuration time.Duration
	// WindowBuckets is how many buckets a time window moves by. Default 10.
	WindowBuckets int
	// MinimumCalls is how many calls the window must hold before a rate is
	// judged. Default 100, or WindowSize when smaller. A count window never
	// holds more than WindowSize calls, so a larger value is refused.
	MinimumCalls int
	// FailureRate is the failure rate, in (0, 1], at which the circuit
	// opens. Default 0.5.
	FailureRate float64
	// SlowCallDuration is how long a call must take to count as slow.
	// Default 0: slow calls are not tracked (and no clock is read on the
	// success path).
	SlowCallDuration time.Duration
	// SlowCallRate is the slow-call rate, in (0, 1], at which the circuit
	// opens. Default 1.
	SlowCallRate float64
	// HalfOpenCalls is how many calls are let through in HalfOpen.
	// Default 10.
	HalfOpenCalls int
	// HalfOpenMaxWait is the longest the circuit stays HalfOpen before
	// opening again; the open delay then runs from the moment it passed.
	// Default 0: until the HalfOpenCalls have ended.
	HalfOpenMaxWait time.Duration
	// OpenDelay is how long the circuit stays open: delay.Constant, or
	// delay.Exponential (capped by Max) over the openings in a row.
	// Default: exponential from 5s, doubling, capped at 1 minute. (Kresil's
	// is a constant minute; a database restart or failover is usually over
	// in seconds, and a minute of rejections would outlast it.)
	OpenDelay delay.Strategy
	// IsFailure says whether an error counts as a failure; other errors
	// count as successes. Default: every error.
	IsFailure func(err error) bool
	// IsIgnored says whether an error is not recorded at all. Default:
	// context.Canceled (the caller went away; the service said nothing).
	IsIgnored func(err error) bool
	// ThrottleK is the adaptive mode's K: the breaker starts rejecting once
	// requests exceed K times the accepts. Default 2; at least 1 (below 1
	// it would reject calls that all succeed).
	ThrottleK float64
	// Clock is where time is read. Nil means clock.System().
	Clock clock.Clock
	// Listener receives state changes, rejections and threshold events.
	Listener resilience.Listener
	// Rand returns a uniform float in [0, 1) for the adaptive mode. Default
	// math/rand/v2; tests may fix it.
	Rand func() float64
}

// Defaults of the zero Config.
const (
	DefaultWindowSize     = 100
	DefaultWindowDuration = time.Minute
	DefaultThrottleWindow = 2 * time.Minute
	DefaultWindowBuckets  = 10
	DefaultMinimumCalls   = 100
	DefaultFailureRate    = 0.5
	DefaultSlowCallRate   = 1.0
	DefaultHalfOpenCalls  = 10
	DefaultThrottleK      = 2.0
)

// DefaultOpenDelay is the OpenDelay of the zero Config.
var DefaultOpenDelay = delay.Strategy{Kind: delay.Exponential, Initial: 5 * time.Second, Multiplier: 2, Max: time.Minute}

const mechanism = "breaker"

// validate checks c and returns it with the defaults filled in.
func (c Config) validate() (Config, error) {
	checks := []error{
		resil.Check(c.Mode <= Adaptive, mechanism, "Mode", c.Mode, "Threshold or Adaptive"),
		resil.Check(c.Window <= TimeWindow, mechanism, "Window", c.Window, "CountWindow or TimeWindow"),
		resil.Check(c.WindowSize >= 0, mechanism, "WindowSize", c.WindowSize, "a count >= 0 (0: 100)"),
		resil.Check(c.WindowDuration >= 0, mechanism, "WindowDuration", c.WindowDuration, "a duration >= 0 (0: 1m)"),
		resil.Check(c.WindowBuckets >= 0, mechanism, "WindowBuckets", c.WindowBuckets, "a count >= 0 (0: 10)"),
		resil.Check(c.MinimumCalls >= 0, mechanism, "MinimumCalls", c.MinimumCalls, "a count >= 0 (0: 100)"),
		resil.Check(c.FailureRate >= 0 && c.FailureRate <= 1, mechanism, "FailureRate", c.FailureRate, "a rate in (0, 1] (0: 0.5)"),
		resil.Check(c.SlowCallDuration >= 0, mechanism, "SlowCallDuration", c.SlowCallDuration, "a duration >= 0 (0: off)"),
		resil.Check(c.SlowCallRate >= 0 && c.SlowCallRate <= 1, mechanism, "SlowCallRate", c.SlowCallRate, "a rate in (0, 1] (0: 1)"),
		resil.Check(c.HalfOpenCalls >= 0, mechanism, "HalfOpenCalls", c.HalfOpenCalls, "a count >= 0 (0: 10)"),
		resil.Check(c.HalfOpenMaxWait >= 0, mechanism, "HalfOpenMaxWait", c.HalfOpenMaxWait, "a duration >= 0 (0: no limit)"),
		resil.CheckDelay(c.OpenDelay, mechanism, "OpenDelay", delay.Constant, delay.Exponential),
		resil.Check(c.ThrottleK == 0 || c.ThrottleK >= 1, mechanism, "ThrottleK", c.ThrottleK,
			"0 (meaning 2) or a factor >= 1 (below 1 it rejects calls that all succeed)"),
	}
	if err := resil.FirstError(checks...); err != nil {
		return c, err
	}
	c.WindowSize = cmp.Or(c.WindowSize, DefaultWindowSize)
	if c.WindowDuration == 0 {
		c.WindowDuration = DefaultWindowDuration
		if c.Mode == Adaptive {
			c.WindowDuration = DefaultThrottleWindow
		}
	}
	c.WindowBuckets = cmp.Or(c.WindowBuckets, DefaultWindowBuckets)
	if err := resil.Check(c.WindowDuration/time.Duration(c.WindowBuckets) > 0, mechanism, "WindowBuckets",
		c.WindowBuckets, "at most WindowDuration in nanoseconds"); err != nil {
		return c, err
	}
	if c.MinimumCalls == 0 {
		c.MinimumCalls = DefaultMinimumCalls
		if c.Window == CountWindow {
			c.MinimumCalls = min(c.MinimumCalls, c.WindowSize)
		}
	}
	if err := resil.Check(c.Window != CountWindow || c.Mode == Adaptive || c.MinimumCalls <= c.WindowSize,
		mechanism, "MinimumCalls", c.MinimumCalls, fmt.Sprintf("at most WindowSize (%d) for a count window", c.WindowSize)); err != nil {
		return c, err
	}
	c.FailureRate = cmp.Or(c.FailureRate, DefaultFailureRate)
	c.SlowCallRate = cmp.Or(c.SlowCallRate, DefaultSlowCallRate)
	c.HalfOpenCalls = cmp.Or(c.HalfOpenCalls, DefaultHalfOpenCalls)
	c.OpenDelay = resil.DelayOr(c.OpenDelay, DefaultOpenDelay)
	if c.IsFailure == nil {
		c.IsFailure = func(error) bool { return true }
	}
	if c.IsIgnored == nil {
		c.IsIgnored = func(err error) bool { return errors.Is(err, context.Canceled) }
	}
	c.ThrottleK = cmp.Or(c.ThrottleK, DefaultThrottleK)
	c.Clock = resil.ClockOr(c.Clock)
	return c, nil
}
