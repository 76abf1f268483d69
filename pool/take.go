package pool

import (
	"context"
	"sync/atomic"
	"time"
)

// waiter is a caller that asked the actor for a new object. The actor hands
// the outcome over through reply, after winning state from waiting to
// delivered; the caller leaves by winning it from waiting to gone.
type waiter[T any] struct {
	state atomic.Int32
	reply chan created[T] // buffered 1; receives exactly once if delivered
}

const (
	waiterWaiting int32 = iota
	waiterDelivered
	waiterGone
)

// created is the outcome of one creation.
type created[T any] struct {
	e   *entry[T]
	err error
}

// deliver hands r to w if w still waits; the actor calls it.
func (w *waiter[T]) deliver(r created[T]) bool {
	if !w.state.CompareAndSwap(waiterWaiting, waiterDelivered) {
		return false
	}
	w.reply <- r
	return true
}

// leave withdraws w. If the actor already delivered, it returns that outcome
// (which the caller must then consume) and true.
func (w *waiter[T]) leave() (created[T], bool) {
	if w.state.CompareAndSwap(waiterWaiting, waiterGone) {
		return created[T]{}, false
	}
	return <-w.reply, true
}

// takeSlow waits for an object: from idle (given back or created for
// nobody in particular) or from a creation this caller asked for.
//
// A caller that finds the pool full waits on queue alone; it is woken to
// ask for a creation, or to return ErrClosed, by the wake marker, which
// goes to the longest waiter like any entry. No wake-up is lost:
//
//   - Before each look at closed and total, the caller has counted itself in
//     waiting (first pass) or cleared wakeOut (after receiving the marker).
//     The actor stores total, and Close stores closed, before the actor's
//     wakeIfNeeded loads waiting and sets wakeOut. So either the caller
//     sees what the event left (and asks for a creation or returns), or
//     that wakeIfNeeded sees it waiting and finds wakeOut clear, or set
//     by a marker not yet received or not yet cleared: either way a marker
//     is on its way to a caller that looks afterwards.
//   - A caller that receives the marker but has already asked for a
//     creation cannot use the slot; every caller leaving takeSlow calls
//     wakeIfNeeded, so the marker is sent again once it has its object (or
//     error), and meanwhile its own creation, pending or in flight, is an
//     event after which the actor calls wakeIfNeeded too.
//   - On Close every caller leaving with ErrClosed passes the marker on
//     (wakeIfNeeded sees closed and the others in waiting), so all waiters
//     are released in turn.
//
// Whoever else receives the marker from queue (takeIdle, tick, drainClosed)
// puts it back, so it is never lost and there is never more than one.
func (p *Pool[T]) takeSlow(ctx context.Context) (Handle[T], error) {
	if p.closed.Load() {
		return Handle[T]{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Handle[T]{}, err
	}
	n := p.waiting.Add(1)
	if n > int64(p.cfg.MaxQueueSize) {
		p.waiting.Add(-1)
		p.counters.queueFull.Add(1)
		return Handle[T]{}, &QueueFullError{Waiting: int(n - 1), MaxQueueSize: p.cfg.MaxQueueSize, MaxObjects: p.cfg.MaxObjects}
	}
	defer p.stopWaiting()
	start := p.waitClock()
	// Now that we count in waiting, every entry pushed to a shard from here
	// on is flushed to queue by its pusher; flush those already there. Only
	// the first of a run of waiters (waiting was 0) has to: an entry is
	// pushed to a shard only by a pusher that read waiting as 0, that is,
	// before the first waiter of the run counted itself, and that pusher
	// either flushes it (its second read of waiting sees a waiter) or
	// pushed it before the first waiter's flush looked at the shard (see
	// pushIdle). Later waiters of the run find the shards empty, or being
	// flushed.
	if n == 1 {
		p.flushToQueue()
	}

	done := ctx.Done()
	var w *waiter[T] // non-nil once this caller asked for a creation
	var reply chan created[T]
	for {
		if p.closed.Load() {
			p.returnDelivered(w)
			return Handle[T]{}, ErrClosed
		}
		if w == nil && p.total.Load() < int64(p.cfg.MaxObjects) {
			w = &waiter[T]{reply: make(chan created[T], 1)}
			reply = w.reply
			select {
			case p.mailbox <- message[T]{kind: msgTake, w: w}:
			case <-p.done:
				return Handle[T]{}, ErrClosed
			case <-done:
				p.counters.cancelled.Add(1)
				return Handle[T]{}, ctx.Err()
			}
		}
		var e *entry[T]
		if reply == nil && done == nil {
			e = <-p.queue // the pool is full and ctx cannot end: queue alone
		} else {
			select {
			case e = <-p.queue:
			case r := <-reply:
				if r.err != nil {
					return Handle[T]{}, r.err
				}
				h := p.lend(r.e)
				p.observeWait(start)
				return h, nil
			case <-done:
				p.returnDelivered(w)
				p.counters.cancelled.Add(1)
				return Handle[T]{}, ctx.Err()
			}
		}
		if e == p.wake { // a slot was freed, or the pool is closing: look again
			p.wakeOut.Store(false)
			continue
		}
		p.returnDelivered(w)
		h, err, ok := p.handOut(e)
		if !ok {
			w, reply = nil, nil
			continue
		}
		if err == nil {
			p.observeWait(start)
		}
		return h, err
	}
}

// stopWaiting uncounts a caller leaving takeSlow and passes the wake marker
// on if another waiter may have to act (see takeSlow).
func (p *Pool[T]) stopWaiting() {
	p.waiting.Add(-1)
	p.wakeIfNeeded()
}

// returnDelivered withdraws w, if any; an object created for it meanwhile
// goes to idle, and so to the next waiter.
func (p *Pool[T]) returnDelivered(w *waiter[T]) {
	if w == nil {
		return
	}
	if r, ok := w.leave(); ok && r.err == nil {
		p.putIdle(r.e)
	}
}

// monoEpoch is the reference of waitClock's readings with SystemClock.
var monoEpoch = time.Now()

// waitClock reads the clock that wait times are measured on, in nanos. With
// SystemClock it is time.Since of a fixed time, which reads only the
// monotonic clock (time.Now reads the wall clock too, and differences of
// time.Now values use the monotonic clock anyway): the same durations at a
// third of the cost.
func (p *Pool[T]) waitClock() int64 {
	if p.sysClock {
		return int64(time.Since(monoEpoch))
	}
	return nanos(p.cfg.Clock.Now())
}

// observeWait counts a successful Take that had to wait since start (a
// waitClock reading).
func (p *Pool[T]) observeWait(start int64) {
	d := time.Duration(p.waitClock() - start)
	h := p.idle.getHint()
	p.waitStats[h.i&p.idle.mask].observe(d)
	p.idle.putHint(h)
}
