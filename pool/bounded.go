package pool

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// goBounded runs fn in a new goroutine under a context that carries
// parent's values, ends after timeout and is cancelled by Close. The pool
// enforces the bound itself, whether or not fn heeds its context: report is
// called exactly once, with fn's result if fn returns in time, or else, as
// soon as the bound ends, with a zero R and the error that ended it
// (errBound: a deadline, or ErrClosed); late then receives fn's result when
// fn finally returns, and must dispose of it.
//
// report runs while the pool still counts the goroutine (wg), so it may send
// to the actor; late runs after, so it must not.
func goBounded[T, R any](p *Pool[T], parent context.Context, timeout time.Duration, what string,
	fn func(ctx context.Context) R, report func(r R, errBound error), late func(r R)) {
	p.wg.Add(1)
	go func() {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		stopClose := context.AfterFunc(p.baseCtx, cancel)
		var settled atomic.Bool // set by whoever reports
		stopBound := context.AfterFunc(ctx, func() {
			if settled.CompareAndSwap(false, true) {
				var zero R
				report(zero, boundError(p, ctx, what, timeout))
				p.wg.Done()
			}
		})
		r := fn(ctx)
		stopBound()
		stopClose()
		if settled.CompareAndSwap(false, true) {
			report(r, nil)
			p.wg.Done()
			return
		}
		late(r)
	}()
}

// boundError says what ended a bounded call: Close, or its timeout.
func boundError[T any](p *Pool[T], ctx context.Context, what string, timeout time.Duration) error {
	if p.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("pool: %s did not end within %v: %w", what, timeout, ctx.Err())
}

// destroyLate destroys an object the pool has already given up on (its
// slot is free), from a goroutine the actor no longer waits for.
func (p *Pool[T]) destroyLate(obj T, why DestroyReason) {
	if p.closed.Load() {
		why = DestroyClosed
	}
	p.destroyObject(obj, why)
}
