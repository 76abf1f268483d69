package dbguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// Connect makes one connection with create, through g's creation path,
// outermost first: the retry (Config.Retry), the breaker (rejects while the
// circuit is open; records each attempt), the pause (rejects while
// back-pressure closed it; closes it on back-pressure) and the connect-rate
// limiter (waits for a permit). ctx bounds it all (the pool gives Create
// its CreateTimeout).
//
// Its error is the last attempt's, as create returned it; a rejection (a
// *resilience.RejectedError matching breaker.ErrOpen, pause.ErrPaused or
// ratelimit.ErrLimited); or, when the attempt's failure left the circuit
// open, an *OpenedError wrapping it. The last two carry the time from which
// an attempt can succeed (RetryAfter), so that a pool makes none before.
func Connect[T any](ctx context.Context, g *Guard, create func(context.Context) (T, error)) (T, error) {
	var conn T
	_, err := g.stack.Do(ctx, func(ctx context.Context) (struct{}, error) {
		g.attempts.Add(1)
		c, err := create(ctx)
		if err != nil {
			g.attemptFailures.Add(1)
			return struct{}{}, err
		}
		conn = c
		return struct{}{}, nil
	})
	if err != nil {
		var zero T
		return zero, g.opened(err)
	}
	return conn, nil
}

// opened wraps err, a failed creation's, in an *OpenedError when the
// circuit is open now.
func (g *Guard) opened(err error) error {
	if g.breaker == nil || errors.Is(err, resilience.ErrRejected) {
		return err
	}
	if _, ok := resilience.RetryAfter(err); ok {
		return err
	}
	s := g.breaker.Stats()
	if s.State != breaker.Open {
		return err
	}
	return &OpenedError{Err: err, RetryAt: s.OpenUntil}
}

// OpenedError is a connection attempt's failure after which the circuit is
// open (this failure, or others with it, opened it): Err is the attempt's
// error as the driver returned it, RetryAt when the circuit half-opens. It
// matches breaker.ErrOpen (errors.Is), errors.As reaches Err, and RetryAfter
// returns RetryAt, so that the pool makes no attempt before then and fails
// the callers waiting for one at once.
type OpenedError struct {
	Err     error
	RetryAt time.Time
}

func (e *OpenedError) Error() string {
	return fmt.Sprintf("%v (circuit open until %s)", e.Err, e.RetryAt.Format("15:04:05.000"))
}

// Unwrap returns Err and breaker.ErrOpen.
func (e *OpenedError) Unwrap() []error { return []error{e.Err, breaker.ErrOpen} }

// RetryAfter returns RetryAt: the protocol of package resilience.
func (e *OpenedError) RetryAfter() time.Time { return e.RetryAt }

// Factory returns f with its Create made through g (see Connect); its other
// funcs and hooks are f's. A nil Create stays nil (pool.New refuses it).
// Give the pool dbguard.BackPressure too, and call g.Check before each Take to
// fail fast while the circuit is open:
//
//	f := dbguard.Factory(g, respool.PgxFactory(cc))
//	p, err := pool.New(f, pool.Config{BackPressure: dbguard.BackPressure})
func Factory[T any](g *Guard, f pool.Factory[T]) pool.Factory[T] {
	if create := f.Create; create != nil {
		f.Create = func(ctx context.Context) (T, error) { return Connect(ctx, g, create) }
	}
	return f
}
