package compose

import (
	"context"
	"errors"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/fallback"
	"github.com/respool/respool/resilience/retry"
	"github.com/respool/respool/resilience/timeout"
)

// Stack runs an operation through the mechanisms in its slots, in the
// order of the fields, outermost first. A nil slot is skipped. A Stack is
// safe for concurrent use once built; do not change its fields while Do
// runs. The guard slots take any resilience.Guard, but not a nil pointer
// in an interface.
type Stack[T any] struct {
	Fallback *fallback.Fallback[T]
	Retry    *retry.Retry[T]
	Breaker  resilience.Guard // *breaker.Breaker
	Pause    resilience.Guard // *pause.Pause
	Limiter  resilience.Guard // *ratelimit.Limiter, or a key of a *ratelimit.Keyed
	Bulkhead resilience.Guard // *bulkhead.Bulkhead
	Timeout  *timeout.Timeout
}

// numGuards is the number of guard slots.
const numGuards = 4

// Do runs op through the stack and returns its outcome, or a rejection.
// When ctx has already ended, nothing runs and no guard is entered: Do
// returns ctx's error.
func (s *Stack[T]) Do(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	if s.Fallback != nil {
		return s.Fallback.Do(ctx, func(ctx context.Context) (T, error) { return s.retried(ctx, op) })
	}
	return s.retried(ctx, op)
}

// retried runs the attempts the retry allows.
func (s *Stack[T]) retried(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if s.Retry == nil {
		return s.attempt(ctx, op)
	}
	return s.Retry.Do(ctx, func(ctx context.Context) (T, error) { return s.attempt(ctx, op) })
}

// attempt runs op once through the guards.
func (s *Stack[T]) attempt(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	guards := [numGuards]resilience.Guard{s.Breaker, s.Pause, s.Limiter, s.Bulkhead}
	var permits [numGuards]resilience.Permit
	for i, g := range guards {
		if g == nil {
			continue
		}
		p, err := g.Enter(ctx)
		if err != nil {
			exit(&guards, &permits, i, notRun(err))
			var zero T
			return zero, err
		}
		permits[i] = p
	}
	var v T
	var err error
	if s.Timeout != nil {
		v, err = timeout.Do(ctx, s.Timeout, op)
	} else {
		v, err = op(ctx)
	}
	exit(&guards, &permits, numGuards, err)
	return v, err
}

// notRun is the outcome outer guards are given when an inner guard did not
// admit the call: its rejection, or its other error (the wait ended with the
// context, a store failed) wrapped to match resilience.ErrRejected, since
// the operation never ran either way.
func notRun(err error) error {
	if errors.Is(err, resilience.ErrRejected) {
		return err
	}
	return notRunError{err}
}

type notRunError struct{ err error }

func (e notRunError) Error() string   { return "not run: " + e.err.Error() }
func (e notRunError) Unwrap() []error { return []error{e.err, resilience.ErrRejected} }

// exit ends the calls guards[:n] admitted, innermost first.
func exit(guards *[numGuards]resilience.Guard, permits *[numGuards]resilience.Permit, n int, err error) {
	for i := n - 1; i >= 0; i-- {
		if g := guards[i]; g != nil {
			g.Exit(permits[i], err)
		}
	}
}
