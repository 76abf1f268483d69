package retry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Retry runs operations again when they fail. Make one with New.
type Retry[T any] struct {
	c Config[T] // validated, defaults filled in; read-only

	retries, giveUps, waitsCut atomic.Uint64
}

// Stats counts what a Retry did; a first attempt that succeeds counts
// nothing.
type Stats struct {
	Retries  uint64 // attempts scheduled after a failure
	GiveUps  uint64 // Do calls that ended on a retryable failure once attempts or time ran out
	WaitsCut uint64 // waits ended by the context
}

// Stats returns the counters.
func (r *Retry[T]) Stats() Stats {
	return Stats{Retries: r.retries.Load(), GiveUps: r.giveUps.Load(), WaitsCut: r.waitsCut.Load()}
}

// New returns a Retry configured by c, or a *resilience.ConfigError.
func New[T any](c Config[T]) (*Retry[T], error) {
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	return &Retry[T]{c: c}, nil
}

// Do runs op until it succeeds, its failure is not retryable, or the
// attempts, MaxElapsed or ctx run out, and returns the last outcome (through
// MapResult). When ctx ends during a wait, the error matches both ctx's
// error and the last attempt's. No attempt starts once ctx has ended: when
// it has ended before Do, op is not run and Do returns ctx's error as it
// is.
func (r *Retry[T]) Do(ctx context.Context, op func(context.Context) (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	st := r.Begin()
	for {
		v, err := op(ctx)
		if !r.Next(ctx, &st, v, err) {
			return r.End(&st, v, err)
		}
	}
}

// State is one Do's progress. Begin makes it; callers that drive the
// attempts themselves (package compose) pass it to Next and End.
type State struct {
	attempts int
	start    time.Time     // set only when MaxElapsed bounds the retries
	prev     time.Duration // the last delay, for decorrelated jitter
	waitErr  error         // ctx's error when a wait was cut short
}

// Attempts returns the attempts made so far.
func (s *State) Attempts() int { return s.attempts }

// Begin starts a Do.
func (r *Retry[T]) Begin() State {
	var st State
	if r.c.MaxElapsed > 0 {
		st.start = r.c.Clock.Now()
	}
	return st
}

// Next records an attempt's outcome and reports whether to attempt again,
// after waiting the delay (which ends with ctx).
func (r *Retry[T]) Next(ctx context.Context, st *State, v T, err error) bool {
	st.attempts++
	if err == nil {
		if r.c.RetryOnResult == nil || !r.c.RetryOnResult(v) {
			return false
		}
	} else if !r.c.RetryOn(err) {
		return false
	}
	return r.again(ctx, st, err)
}

// again decides and waits for a retry of a failed attempt (the slow path).
func (r *Retry[T]) again(ctx context.Context, st *State, err error) bool {
	c := &r.c
	if st.attempts >= c.MaxAttempts {
		r.giveUp(st, err)
		return false
	}
	now := c.Clock.Now()
	var d time.Duration
	if at, ok := r.retryAfter(err, now); ok {
		d = max(at.Sub(now), 0)
	} else {
		d = c.Delay.Delay(st.attempts, st.prev, err)
	}
	st.prev = d
	// Give up at once when the retry could not start in time.
	if c.MaxElapsed > 0 && now.Add(d).Sub(st.start) > c.MaxElapsed {
		r.giveUp(st, err)
		return false
	}
	if dl, ok := ctx.Deadline(); ok && resil.IsSystem(c.Clock) && time.Now().Add(d).After(dl) {
		r.giveUp(st, err)
		return false
	}
	r.retries.Add(1)
	resil.Emit(c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: c.Name, Kind: resilience.EventRetry,
		Attempt: st.attempts, Delay: d, RetryAt: now.Add(d), Err: err})
	if d <= 0 {
		if ctx.Err() != nil {
			r.waitsCut.Add(1)
			st.waitErr = context.Cause(ctx)
			return false
		}
		return true
	}
	t := c.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		if ctx.Err() == nil { // select picks either when both are ready
			return true
		}
	case <-ctx.Done():
	}
	r.waitsCut.Add(1)
	st.waitErr = context.Cause(ctx)
	return false
}

func (r *Retry[T]) retryAfter(err error, now time.Time) (time.Time, bool) {
	if at, ok := resilience.RetryAfter(err); ok {
		return at, true
	}
	if r.c.RetryAfter != nil {
		if d, ok := r.c.RetryAfter(err); ok {
			return now.Add(d), true
		}
	}
	return time.Time{}, false
}

func (r *Retry[T]) giveUp(st *State, err error) {
	r.giveUps.Add(1)
	if r.c.Listener == nil {
		return
	}
	r.c.Listener(resilience.Event{Time: r.c.Clock.Now(), Mechanism: mechanism, Name: r.c.Name,
		Kind: resilience.EventGiveUp, Attempt: st.attempts, Err: err})
}

// End returns the final outcome of a Do through MapResult.
func (r *Retry[T]) End(st *State, v T, err error) (T, error) {
	if st.waitErr != nil {
		err = errors.Join(st.waitErr, err)
	}
	if r.c.MapResult != nil {
		return r.c.MapResult(v, err)
	}
	return v, err
}
