package dbguard

import (
	"cmp"
	"errors"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/ratelimit"
	"github.com/respool/respool/resilience/retry"
)

// Config configures a Guard. It carries the mechanisms' own Configs: a zero
// field of Breaker, Retry or Pause takes the value of the database preset
// (BreakerPreset, RetryPreset, PausePreset), so that a Config that sets only
// Breaker.FailureRate keeps the window of 20 calls, not breaker's generic
// 100; what the preset leaves zero is the mechanism's own default (written
// on its Config). A delay.Strategy is one value: the preset's whole
// Strategy when its Kind is delay.Default, else the one given. An empty
// Name, Clock or Listener of a nested Config is the Guard's. Every
// mechanism can be turned off. Values are checked once, by New (through
// breaker.New, retry.New and pause.New).
type Config struct {
	// Name names the mechanisms in events and errors.
	Name string
	// Breaker configures the circuit breaker of connection attempts and
	// statements: BreakerPreset for its zero fields. The Guard counts as a
	// failure, besides what IsFailure says, a statement that Exit judged
	// one (see Guard.Exit).
	Breaker breaker.Config
	// BreakerDisabled turns the breaker off: nothing is rejected, nothing
	// recorded (respool_breaker=off).
	BreakerDisabled bool
	// Retry configures the attempts of one connection creation:
	// RetryPreset for its zero fields (3 attempts); MaxAttempts 1 turns
	// retries off. Whatever RetryOn says, an attempt is not made again after
	// a rejection or once the circuit is no longer closed.
	Retry retry.Config[struct{}]
	// Pause configures the pool-wide pause after back-pressure: PausePreset
	// for its zero fields.
	Pause pause.Config
	// PauseDisabled turns the pause off (respool_pause=off).
	PauseDisabled bool
	// ConnectRate limits connection attempts to this many a second (a
	// token bucket holding one second's worth; attempts beyond it wait, up
	// to the creation's deadline). Zero, the default, means no limit: the
	// pool's creation backoff and the breaker already bound the attempts
	// made to a failing server, and a limit that bites a healthy one only
	// makes callers wait. Set it where many processes share a server and
	// reconnect together.
	ConnectRate int
	// ConnectRateStore, when set, holds the connect-rate limiter's state
	// (under the key ""), so that ConnectRate is the rate of every Guard,
	// in any process, given the same store: one store a database
	// (redisbudget.Share gives one in Redis). Nil: the state is in this
	// Guard. Ignored while ConnectRate is 0.
	ConnectRateStore ratelimit.Store
	// Join, when set, joins the Guard to those of the other processes that
	// share its database (redisbudget.Share and dbbudget.Share set it):
	// New calls it once with the Guard it made; tell is then given every
	// event Listener is given, after Listener, and leave is called by
	// Close. Nil: none.
	Join func(g *Guard) (tell resilience.Listener, leave func())
	// Clock is where time is read and timers set. Nil means clock.System().
	Clock clock.Clock
	// Listener receives the mechanisms' events (see resilience.Event); it is
	// also given to each mechanism whose own Listener is nil.
	Listener resilience.Listener
}

const mechanism = "dbguard"

// merged returns c with the presets merged into its mechanisms' Configs
// (see Config) and its Clock set. It checks only ConnectRate, the Guard's
// own value; the mechanisms check theirs.
func (c Config) merged() (Config, error) {
	if err := resil.Check(c.ConnectRate >= 0, mechanism, "ConnectRate", c.ConnectRate,
		"a rate >= 0 a second (0: no limit)"); err != nil {
		return c, err
	}
	c.Clock = resil.ClockOr(c.Clock)
	bp, rp, pp := BreakerPreset(), RetryPreset(), PausePreset()
	bp.Name, bp.Clock, bp.Listener = c.Name, c.Clock, c.Listener
	rp.Name, rp.Clock, rp.Listener = c.Name, c.Clock, c.Listener
	pp.Name, pp.Clock, pp.Listener = c.Name, c.Clock, c.Listener
	c.Breaker = mergeBreaker(c.Breaker, bp)
	c.Retry = mergeRetry(c.Retry, rp)
	c.Pause = mergePause(c.Pause, pp)
	return c, nil
}

// mergeBreaker returns c with each zero field set to p's: one line a field
// (TestMergeCoversEveryField fails when a field has none). MinimumCalls
// is, for a count window, at most the window, as breaker's own default is.
func mergeBreaker(c, p breaker.Config) breaker.Config {
	c.Name = cmp.Or(c.Name, p.Name)
	c.Mode = cmp.Or(c.Mode, p.Mode)
	c.WindowSize = cmp.Or(c.WindowSize, p.WindowSize)
	c.WindowDuration = cmp.Or(c.WindowDuration, p.WindowDuration)
	c.WindowBuckets = cmp.Or(c.WindowBuckets, p.WindowBuckets)
	if c.MinimumCalls == 0 {
		c.MinimumCalls = p.MinimumCalls
		if c.Mode == breaker.CountWindow && c.WindowSize > 0 {
			c.MinimumCalls = min(c.MinimumCalls, c.WindowSize)
		}
	}
	c.FailureRate = cmp.Or(c.FailureRate, p.FailureRate)
	c.SlowCallDuration = cmp.Or(c.SlowCallDuration, p.SlowCallDuration)
	c.SlowCallRate = cmp.Or(c.SlowCallRate, p.SlowCallRate)
	c.HalfOpenCalls = cmp.Or(c.HalfOpenCalls, p.HalfOpenCalls)
	c.HalfOpenMaxWait = cmp.Or(c.HalfOpenMaxWait, p.HalfOpenMaxWait)
	c.OpenDelay = resil.DelayOr(c.OpenDelay, p.OpenDelay)
	if c.IsFailure == nil {
		c.IsFailure = p.IsFailure
	}
	if c.IsIgnored == nil {
		c.IsIgnored = p.IsIgnored
	}
	c.ThrottleK = cmp.Or(c.ThrottleK, p.ThrottleK)
	c.Clock = cmp.Or(c.Clock, p.Clock)
	if c.Listener == nil {
		c.Listener = p.Listener
	}
	if c.Rand == nil {
		c.Rand = p.Rand
	}
	return c
}

// mergeRetry is mergeBreaker for a retry.
func mergeRetry(c, p retry.Config[struct{}]) retry.Config[struct{}] {
	c.Name = cmp.Or(c.Name, p.Name)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, p.MaxAttempts)
	c.MaxElapsed = cmp.Or(c.MaxElapsed, p.MaxElapsed)
	c.Delay = resil.DelayOr(c.Delay, p.Delay)
	if c.RetryOn == nil {
		c.RetryOn = p.RetryOn
	}
	if c.RetryOnResult == nil {
		c.RetryOnResult = p.RetryOnResult
	}
	if c.MapResult == nil {
		c.MapResult = p.MapResult
	}
	if c.RetryAfter == nil {
		c.RetryAfter = p.RetryAfter
	}
	c.Clock = cmp.Or(c.Clock, p.Clock)
	if c.Listener == nil {
		c.Listener = p.Listener
	}
	return c
}

// mergePause is mergeBreaker for a pause. NoWait is on when either says so.
func mergePause(c, p pause.Config) pause.Config {
	c.Name = cmp.Or(c.Name, p.Name)
	if c.Classify == nil {
		c.Classify = p.Classify
	}
	c.DefaultPause = cmp.Or(c.DefaultPause, p.DefaultPause)
	c.MaxPause = cmp.Or(c.MaxPause, p.MaxPause)
	c.Escalation = cmp.Or(c.Escalation, p.Escalation)
	c.EscalationWindow = cmp.Or(c.EscalationWindow, p.EscalationWindow)
	c.NoWait = c.NoWait || p.NoWait
	c.Clock = cmp.Or(c.Clock, p.Clock)
	if c.Listener == nil {
		c.Listener = p.Listener
	}
	return c
}

// within returns err, a mechanism's *resilience.ConfigError, as the Guard's:
// its field named by its path in Config (Breaker.WindowSize).
func within(field string, err error) error {
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Mechanism, out.Field = mechanism, field+"."+ce.Field
	return &out
}
