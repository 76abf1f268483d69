package pool

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The overload policy (Config.Overload): what happens to callers who wait
// for a give-back when more wait than the pool can serve in time.
//
// Everything here runs in callers that wait, never on the fast path. The
// measurements are estimates shared by those callers, updated without
// locks; a lost update only delays an estimate.
//
// Hold times are measured on objects lent to callers that waited: the
// taker stores its clock reading and lease on the entry (lentAt); the
// caller that next receives the object from queue, straight from its
// GiveBack, computes the hold with its own clock reading (sampleHold). An
// object given back to a shard (nobody waited) is not measured: the
// shards' flush and the tick clear lentAt, so idle time never counts as a
// hold.

// overloadState is the policy's shared state.
type overloadState struct {
	// hold is the mean hold time (in clock units) of objects lent to
	// waiting callers: the plain mean of the first holdWeight holds, then
	// a moving average; 0 until measured.
	hold atomic.Int64
	// samples counts the holds measured, up to holdWeight (a little past
	// it when callers race): until then the policy refuses nobody.
	samples atomic.Int64
	// emptyAt is when the queue of callers waiting for a give-back was last
	// empty (CoDel only).
	emptyAt atomic.Int64
}

// holdWeight is the weight of the newest hold time in the moving average
// (1/8), and how many holds the policy measures before it judges anyone.
// The first holds are those of the pool's start (objects just made, used
// for the first time, by callers that all arrived at once), often ten
// times the steady ones on a busy machine: judged on the first alone, a
// caller with 56 ahead of 8 objects expected a 1.4s wait and was refused,
// where it would have been served in about 100ms. Their plain mean gives
// the first hold a weight of 1/holdWeight once holdWeight are measured.
const holdWeight = 8

// needed is the time a caller is expected to need the object for: the mean
// hold and an eighth more, a margin for holds longer than the mean and
// timers that fire late, so that a caller admitted with just enough time
// is not cut short (a cancelled query may cost its connection).
func needed(hold int64) int64 { return hold + hold/8 }

// lentAt records that e, just lent as h at now, was taken by a caller that
// waited: its hold will be measured.
func (p *Pool[T]) lentAt(e *entry[T], h Handle[T], now int64) {
	if p.cfg.Overload == OverloadDeadline {
		e.lentAt, e.lentLease = now, h.lease
	}
}

// sampleHold measures the hold that ended with e's give-back, if e was lent
// to a waiting caller and came straight back to queue; e has just been
// received from queue, at now.
func (p *Pool[T]) sampleHold(e *entry[T], now int64) {
	at := e.lentAt
	if at == 0 {
		return
	}
	e.lentAt = 0
	if e.lease.Load() != e.lentLease+1 || now < at { // taken again since, from idle
		return
	}
	s := now - at
	n := p.overload.samples.Load()
	if n < holdWeight {
		n = p.overload.samples.Add(1)
	}
	if old := p.overload.hold.Load(); old != 0 {
		s = old + (s-old)/min(n, holdWeight) // the plain mean of the first holdWeight
	}
	p.overload.hold.Store(max(s, 1))
}

// inUse estimates the objects held by callers: slots taken but for
// creations and slot markers.
func (p *Pool[T]) inUse() int {
	return int(max(1, p.total.Load()-p.creating.Load()-p.offered.Load()))
}

// admit applies the overload policy to t, about to wait for a give-back
// behind ahead other callers. It returns an *OverloadError when the
// deadline policy finds the caller cannot be served in time; under CoDel it
// may bound the wait instead.
func (t *taker[T]) admit(ahead int) error {
	p := t.p
	t.ahead = ahead
	switch p.cfg.Overload {
	case OverloadDeadline:
		if t.deadline == 0 && t.waitDeadline == 0 {
			return nil
		}
		hold := p.overload.hold.Load()
		inUse := p.inUse()
		if p.overload.samples.Load() < holdWeight || ahead < inUse { // not measured enough yet, or not overloaded
			return nil
		}
		now := p.clock()
		if (t.waitDeadline != 0 && now >= t.waitDeadline) || (t.deadline != 0 && now >= t.deadline) {
			return nil // its wait ends at once, with its own error
		}
		t.overloaded = true
		wait := int64(ahead+1) * hold / int64(inUse)
		if (t.waitDeadline != 0 && now+wait > t.waitDeadline) || (t.deadline != 0 && now+wait+needed(hold) > t.deadline) {
			left := t.waitDeadline
			if t.deadline != 0 {
				left = t.deadline
			}
			return &OverloadError{Policy: OverloadDeadline, Ahead: ahead, InUse: inUse,
				Wait: time.Duration(wait), Hold: time.Duration(hold), Left: time.Duration(left - now)}
		}
	case OverloadCoDel:
		now := p.clock()
		if ahead == 0 {
			p.overload.emptyAt.Store(now)
		}
		t.shedAfter = p.cfg.CoDelInterval
		if now-p.overload.emptyAt.Load() >= int64(p.cfg.CoDelInterval) {
			t.shedAfter = p.cfg.CoDelTarget
		}
		t.shedTimer = p.startTimer(t.shedAfter)
		t.shed = t.shedTimer.C()
	}
	return nil
}

// refused counts a caller the policy failed as it joined the queue, and
// yields its processor once. Refused callers often call again at once:
// without the yield each ran until the scheduler preempted it (10ms), and
// the callers holding objects, woken by the network, waited behind dozens
// of them to run; their holds lengthened, and the policy, measuring them,
// refused more (on 2 busy cores, holds of 15ms became 200-600ms for
// seconds). The yield costs only refused callers.
func (p *Pool[T]) refused() {
	p.counters.overloaded.Add(1)
	runtime.Gosched()
}

// atTurn applies the deadline policy to t, which has just received e from
// queue at now: a caller judged under overload with less than the mean
// hold (and its margin, see needed) left before its deadline leaves e to
// the next caller and fails.
func (t *taker[T]) atTurn(e *entry[T], now int64) error {
	if !t.overloaded || t.deadline == 0 {
		return nil
	}
	p := t.p
	hold := p.overload.hold.Load()
	if left := t.deadline - now; left < needed(hold) {
		p.putIdle(e) // to the next caller: t still counts in waiting
		p.counters.overloaded.Add(1)
		return &OverloadError{Policy: OverloadDeadline, Ahead: t.ahead, InUse: p.inUse(),
			Hold: time.Duration(hold), Left: time.Duration(left), AtTurn: true}
	}
	return nil
}

// shedByCoDel counts and returns the end of a wait by CoDel's target.
func (t *taker[T]) shedByCoDel() error {
	t.p.counters.overloaded.Add(1)
	return &OverloadError{Policy: OverloadCoDel, Ahead: t.ahead, InUse: t.p.inUse(), Wait: t.shedAfter}
}

// queueEmptied notes that the last caller waiting for a give-back has left
// the queue (CoDel only).
func (p *Pool[T]) queueEmptied() {
	if p.cfg.Overload == OverloadCoDel {
		p.overload.emptyAt.Store(p.clock())
	}
}
