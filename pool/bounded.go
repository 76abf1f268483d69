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
// fn finally returns, after report has returned, and must dispose of it.
//
// The caller waiting for fn is answered at the bound, but what fn works on
// (an object being created or tested) exists until fn returns: its slot
// stays taken until then, so that MaxObjects bounds the objects that exist,
// those of calls given up on included. late therefore ends by telling the
// actor (msgLate) that the slot is free. Both report and late run while the
// pool counts the goroutine (wg), so both may send to the actor; the actor
// runs until every slot is free, so it is there to receive.
func goBounded[T, R any](p *Pool[T], parent context.Context, timeout time.Duration, what string,
	fn func(ctx context.Context) R, report func(r R, errBound error), late func(r R)) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		stopClose := context.AfterFunc(p.baseCtx, cancel)
		var settled atomic.Bool         // set by whoever reports
		reported := make(chan struct{}) // closed once the bound's report has returned
		stopBound := context.AfterFunc(ctx, func() {
			if settled.CompareAndSwap(false, true) {
				var zero R
				report(zero, boundError(p, ctx, what, timeout))
				close(reported)
			}
		})
		r := fn(ctx)
		stopBound()
		stopClose()
		if settled.CompareAndSwap(false, true) {
			report(r, nil)
			return
		}
		<-reported // the actor hears of the bound before it hears of the end
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

// destroyLate destroys an object that is not an entry, in the goroutine of
// the call that has it: one refused by AfterCreate, or one that a call the
// pool gave up on returned late (whose slot is freed once that call tells
// the actor it has ended: lateEnded); release gives its slot of
// Config.Budget back (nil: none).
func (p *Pool[T]) destroyLate(obj T, release func(), why destroyReason) {
	if p.closed.Load() {
		why = reasonClosed
	}
	p.destroyObject(obj, release, why)
}

// lateEnded tells the actor that a call it gave up on has ended, its object
// destroyed: e is the entry under test or under a hook, nil for a creation.
func (p *Pool[T]) lateEnded(e *entry[T]) { p.send(message[T]{kind: msgLate, e: e}) }
