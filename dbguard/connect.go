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

// connect makes one connection with create, through g's creation path,
// outermost first: the retry (Config.Retry), the breaker (rejects while the
// circuit is open; records each attempt), the pause (rejects while
// back-pressure closed it; closes it on back-pressure) and the connect-rate
// limiter (waits for a permit). ctx bounds it all (the pool gives Create
// its CreateTimeout).
//
// Its error is the last attempt's, as create returned it; a rejection (a
// *resilience.RejectedError matching breaker.ErrOpen, pause.ErrPaused or
// ratelimit.ErrLimited); or, when the attempt's failure left the circuit
// open, an *openedError wrapping it. The last two carry the time from which
// an attempt can succeed (RetryAfter), so that a pool makes none before.
func connect[T any](ctx context.Context, g *Guard, create func(context.Context) (T, error)) (T, error) {
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

// opened wraps err, a failed creation's, in an *openedError when the
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
	return &openedError{err: err, retryAt: s.OpenUntil}
}

// openedError is a connection attempt's failure after which the circuit is
// open (this failure, or others with it, opened it): err is the attempt's
// error as the driver returned it, retryAt when the circuit half-opens. It
// matches breaker.ErrOpen (errors.Is), errors.As reaches err, and
// resilience.RetryAfter returns retryAt, so that the pool makes no attempt
// before then and fails the callers waiting for one at once.
type openedError struct {
	err     error
	retryAt time.Time
}

func (e *openedError) Error() string {
	return fmt.Sprintf("%v (circuit open until %s)", e.err, e.retryAt.Format("15:04:05.000"))
}

// Unwrap returns err and breaker.ErrOpen.
func (e *openedError) Unwrap() []error { return []error{e.err, breaker.ErrOpen} }

// RetryAfter returns retryAt: the protocol of package resilience.
func (e *openedError) RetryAfter() time.Time { return e.retryAt }

// Factory returns f with its Create made through g's creation path,
// outermost first: the retry (Config.Retry), the breaker (rejects while the
// circuit is open; records each attempt), the pause (rejects while
// back-pressure closed it; closes it on back-pressure) and the connect-rate
// limiter (waits for a permit). Create's context bounds it all (the pool
// gives Create its CreateTimeout). Its other funcs and hooks are f's. A nil
// Create stays nil (pool.New refuses it).
//
// Create's error is the last attempt's, as f.Create returned it; a
// rejection (a *resilience.RejectedError matching breaker.ErrOpen,
// pause.ErrPaused or ratelimit.ErrLimited); or, when the attempt's failure
// left the circuit open, the attempt's error (errors.As reaches it)
// matching breaker.ErrOpen too. The last two carry the time from which an
// attempt can succeed (resilience.RetryAfter), so that the pool makes none
// before. Give the pool dbguard.BackPressure too, and call g.Admit before
// each Take to fail fast while the circuit is open:
//
//	f := dbguard.Factory(g, respool.PgxFactory(cc))
//	p, err := pool.New(f, pool.Config{BackPressure: dbguard.BackPressure})
//	done, err := g.Admit() // before each Take
func Factory[T any](g *Guard, f pool.Factory[T]) pool.Factory[T] {
	if create := f.Create; create != nil {
		f.Create = func(ctx context.Context) (T, error) { return connect(ctx, g, create) }
	}
	return f
}
