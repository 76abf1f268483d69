package retry

import (
	"context"
	"errors"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
)

// Config configures a Retry. The zero value of every field is the default
// written beside it (Kresil's defaults).
type Config[T any] struct {
	// Name appears in events and errors.
	Name string
	// MaxAttempts is the most attempts made, the first included.
	// Default 3.
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of
	// the last. Default 0: no bound other than the context's.
	MaxElapsed time.Duration
	// Delay is the wait between attempts. Default: exponential from
	// 500ms, doubling, capped at 1 minute, no jitter.
	Delay delay.Strategy
	// RetryOn says whether a failed attempt's error is worth retrying.
	// Default: every error except the context's cancellation and deadline.
	RetryOn func(err error) bool
	// RetryOnResult says whether a successful attempt's value should be
	// retried anyway. Default: never.
	RetryOnResult func(v T) bool
	// MapResult maps the final outcome, success or failure, before Do
	// returns it. Default: as it is.
	MapResult func(v T, err error) (T, error)
	// RetryAfter reads a server's "retry after d" from an error, the same
	// function type as pause.Config.Classify. Default: none (errors that
	// implement resilience.RetryAfterer are honoured regardless).
	RetryAfter func(err error) (d time.Duration, ok bool)
	// Clock is where time is read and timers set. Nil means clock.System().
	Clock clock.Clock
	// Listener receives EventRetry and EventGiveUp.
	Listener resilience.Listener
}

// DefaultDelay is the delay when Config.Delay is zero.
var DefaultDelay = delay.Strategy{Kind: delay.Exponential, Initial: 500 * time.Millisecond, Multiplier: 2, Max: time.Minute}

// DefaultMaxAttempts is the attempts when Config.MaxAttempts is zero.
const DefaultMaxAttempts = 3

const mechanism = "retry"

// validate checks c and returns it with the defaults filled in.
func (c Config[T]) validate() (Config[T], error) {
	if err := resil.Check(c.MaxAttempts >= 0, mechanism, "MaxAttempts", c.MaxAttempts, "a count >= 0 (0: 3)"); err != nil {
		return c, err
	}
	if err := resil.Check(c.MaxElapsed >= 0, mechanism, "MaxElapsed", c.MaxElapsed, "a duration >= 0 (0: no bound)"); err != nil {
		return c, err
	}
	if err := resil.CheckDelay(c.Delay, mechanism, "Delay"); err != nil {
		return c, err
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	c.Delay = resil.DelayOr(c.Delay, DefaultDelay)
	if c.RetryOn == nil {
		c.RetryOn = retryable
	}
	c.Clock = resil.ClockOr(c.Clock)
	return c, nil
}

// retryable is the default RetryOn.
func retryable(err error) bool {
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
