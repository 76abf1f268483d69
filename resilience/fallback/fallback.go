package fallback

import (
	"context"
	"errors"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Config configures a Fallback. The zero value of every field is the
// default written beside it.
type Config[T any] struct {
	// Name appears in events.
	Name string
	// Value is returned, with a nil error, in place of a failure when Func
	// is nil.
	Value T
	// Func computes the outcome in place of a failure. Default nil: Value.
	Func func(ctx context.Context, err error) (T, error)
	// On says which failures are replaced. Default: every error.
	On func(err error) bool
	// Clock gives events their time. Nil means clock.System().
	Clock clock.Clock
	// Listener receives EventFallback.
	Listener resilience.Listener
}

const mechanism = "fallback"

// Fallback replaces failures. Make one with New.
type Fallback[T any] struct {
	c Config[T]
}

// New returns a Fallback configured by c.
func New[T any](c Config[T]) (*Fallback[T], error) {
	c.Clock = resil.ClockOr(c.Clock)
	return &Fallback[T]{c: c}, nil
}

// Apply returns v and err as they are on success, or when On declines err;
// otherwise Func's outcome, or Value. A failure after ctx has ended
// (cancelled, or past its deadline) is the caller's own and is not
// replaced: Apply returns v and an error that matches ctx's error, and err
// when that is another (as failsafe-go's fallback returns the context's
// error). ctx is the caller's context, the one the operation was run with.
func (f *Fallback[T]) Apply(ctx context.Context, v T, err error) (T, error) {
	if err == nil || (f.c.On != nil && !f.c.On(err)) {
		return v, err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(err, ctxErr) {
			err = errors.Join(ctxErr, err)
		}
		return v, err
	}
	resil.Emit(f.c.Listener, resilience.Event{Time: f.c.Clock.Now(), Mechanism: mechanism, Name: f.c.Name,
		Kind: resilience.EventFallback, Err: err})
	if f.c.Func != nil {
		return f.c.Func(ctx, err)
	}
	return f.c.Value, nil
}

// Do runs op with ctx and applies the fallback to its outcome.
func (f *Fallback[T]) Do(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	v, err := op(ctx)
	return f.Apply(ctx, v, err)
}
