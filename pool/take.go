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
func (p *Pool[T]) takeSlow(ctx context.Context) (Handle[T], error) {
	if p.closed.Load() {
		return Handle[T]{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Handle[T]{}, err
	}
	if n := p.waiting.Add(1); n > int64(p.cfg.MaxQueueSize) {
		p.waiting.Add(-1)
		p.counters.queueFull.Add(1)
		return Handle[T]{}, &QueueFullError{Waiting: int(n - 1), MaxQueueSize: p.cfg.MaxQueueSize, MaxObjects: p.cfg.MaxObjects}
	}
	defer p.waiting.Add(-1)
	start := p.waitClock()
	// Now that we count in waiting, every entry pushed to a shard from here
	// on is flushed to queue by its pusher; flush those already there.
	p.flushToQueue()

	var w *waiter[T] // non-nil once this caller asked for a creation
	var reply chan created[T]
	for {
		// Load slotFreed before total: if the actor frees a slot after we
		// read total as full, it closes the channel we hold.
		freed := *p.slotFreed.Load()
		// Checked after loading freed: Close sets closed before the actor
		// closes freed (startClose), so a Close we miss here wakes us.
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
			case <-ctx.Done():
				p.counters.cancelled.Add(1)
				return Handle[T]{}, ctx.Err()
			}
		}
		select {
		case e := <-p.queue:
			p.returnDelivered(w)
			h, err, ok := p.handOut(e)
			if !ok {
				w, reply = nil, nil
				continue
			}
			p.observeWait(start, err)
			return h, err
		case r := <-reply:
			if r.err != nil {
				return Handle[T]{}, r.err
			}
			h := p.lend(r.e)
			p.observeWait(start, nil)
			return h, nil
		case <-freed: // a slot was freed, or the pool is closing
		case <-ctx.Done():
			p.returnDelivered(w)
			p.counters.cancelled.Add(1)
			return Handle[T]{}, ctx.Err()
		}
	}
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
func (p *Pool[T]) observeWait(start int64, err error) {
	if err != nil {
		return
	}
	d := time.Duration(p.waitClock() - start)
	p.counters.waits.Add(1)
	p.counters.waitNanos.Add(uint64(max(d, 0)))
	p.counters.waitHist.observe(d)
}
