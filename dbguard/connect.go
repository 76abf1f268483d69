package dbguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/internal/resil"
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
// An attempt the server refused for its credentials (Classification.Auth)
// is not made again, but for one whose credentials a hook gives per
// attempt (resil.ErrFreshCredentials), which the retry makes again, asking
// the hook again, within Config.Retry's attempts (a password rotated at the
// server a moment before the hook gives it); then it opens the circuit at
// once (refusedCredentials): retrying the same password only hammers the
// server, and a half-open probe finds the credentials fixed.
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
			if errors.Is(err, resil.ErrFreshCredentials) {
				return struct{}{}, freshCredentials{err}
			}
			return struct{}{}, err
		}
		conn = c
		return struct{}{}, nil
	})
	if err != nil {
		if Classify(err).Auth {
			g.refusedCredentials(err)
		}
		var zero T
		return zero, g.opened(err)
	}
	return conn, nil
}

// freshCredentials is an authentication failure of a creation whose
// credentials a hook gives per attempt: the retry makes it again (see
// New).
type freshCredentials struct{ error }

func (f freshCredentials) Unwrap() error { return f.error }

// refusedCredentials opens the circuit, when it is closed or half-open,
// after a creation the server refused for its credentials (err), so that
// the pool's callers fail fast with err and a probe tries again after the
// open delay. The state-change event carries err. A probe refused so has
// usually opened it again already (New's IsFailure).
func (g *Guard) refusedCredentials(err error) {
	if g.breaker == nil {
		return
	}
	g.authMu.Lock()
	defer g.authMu.Unlock()
	if s := g.breaker.State(); s != breaker.Closed && s != breaker.HalfOpen {
		return // open already, or held in a state by hand
	}
	g.openedBy.Store(&err)
	_ = g.breaker.TransitionTo(breaker.Open) // refused in Adaptive mode only: it has no Open
	g.openedBy.Store(nil)
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
// before. A creation the server refused for its credentials opens the
// circuit at once (see connect). Give the pool dbguard.BackPressure too, and call g.Admit before
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
