package pool

import (
	"cmp"
	"math/rand/v2"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/resilience"
)

// The creation gate: what the actor does when creations fail.
//
// Healthy, a request for a creation takes a slot when the actor accepts it
// (total counts it) and starts as soon as MaxConcurrentCreates allows.
//
// After a failure (the backoff on, Config.BackoffDisabled unset), the gate is failing until a creation
// succeeds: it is held (no creation starts) until its timer fires, a
// backoff delay later, and then lets one creation run at a time, the probe.
// Meanwhile requests hold no slot, so that every caller that needs a
// creation is in pending, where the actor sees its deadline: those that
// cannot wait for the next attempt are failed at once, and each failure
// sweeps pending again. Callers queued for a give-back reach pending too:
// total stays below capacity, so offerSlots offers them slot markers, which
// they turn into requests.
//
// A failure whose error carries a retry time holds the gate until then with
// that error (pauseErr): every request fails at once with it.
//
// A back-pressure failure (Config.BackPressure) lowers limit, the effective
// MaxObjects, to the objects alive, and holds the gate for the delay it
// names. Callers beyond limit queue for give-backs like callers of a full
// pool. Once the gate opens, capacity is limit+1 while nothing is created
// beyond limit: one probe at a time, each success raising limit by one
// (onCreated) until MaxObjects.
//
// Every field is the actor's.
type createGate struct {
	limit    int   // the effective MaxObjects
	failing  bool  // a creation failed and none has succeeded since (the backoff on)
	held     bool  // no creation starts until timer fires
	retryAt  int64 // when held: when it fires (pool clock)
	pauseErr error // held by this error's retry time: requests fail with it
	heldByBP bool  // held by back-pressure's delay, which a success does not end
	failures int   // creations failed in a row
	level    int   // failures in a row that raised the backoff (see createFailed)
	epoch    uint64
	lastErr  error
	lastAt   int64
	// growFromAlive: back-pressure came while nothing was alive, so the
	// gate failed as for any error; the next success sets limit to the
	// objects alive, from which it grows a probe at a time.
	growFromAlive bool
	timer         clock.Timer
	timerC        <-chan time.Time // timer's channel while held

	// Logging at a bounded rate: lineAt is the clock of the last line (0:
	// none yet), unlogged the failures since.
	lineAt   int64
	unlogged int
}

// failureRecord is what callers and Stats see of the gate.
type failureRecord struct {
	err      error // the last failure, as the factory returned it
	at       int64 // when it came (pool clock)
	failures int   // in a row; 0 once a creation has succeeded
	retryAt  int64 // the next attempt while held, else 0
}

// request is a caller's (or, w nil, nobody's) request for a creation.
type request[T any] struct {
	w        *waiter[T]
	reserved bool // holds a slot, counted in total
}

// capacity is the number of slots that may be taken now: limit, plus one
// for a probe while back-pressure has lowered it, the gate is open and
// nothing is being created beyond it.
func (a *actor[T]) capacity() int {
	g, maxObjects := &a.gate, a.p.cfg.MaxObjects
	switch {
	case g.limit >= maxObjects:
		return maxObjects
	case !g.held && !g.failing && a.total <= g.limit:
		return g.limit + 1
	}
	return g.limit
}

// publishCapacity stores capacity and limit for callers and Stats.
func (a *actor[T]) publishCapacity() {
	a.p.capacity.Store(int64(a.capacity()))
	a.p.limit.Store(int64(a.gate.limit))
}

// mayStart reports whether the gate lets a creation start now.
func (a *actor[T]) mayStart() bool {
	g := &a.gate
	return !a.closing && !g.held && a.creating < a.p.cfg.MaxConcurrentCreates && !(g.failing && a.creating > 0)
}

// createFailed handles a failed creation, made for w (nil: for nobody) by a
// creation started in epoch. Its slot is already free.
//
// Only a failure of a creation started since the previous failure (its
// epoch is current) raises the backoff: the other creations of a burst that
// were in flight when the first one failed bring no news of the server.
func (a *actor[T]) createFailed(w *waiter[T], err error, epoch uint64) {
	p, g := a.p, &a.gate
	c := &p.cfg
	now := p.clock()
	fresh := epoch == g.epoch
	if fresh {
		g.epoch++
	}
	g.failures++
	g.lastErr, g.lastAt = err, now
	// Each branch holds the gate, then logs and publishes (noted), then
	// answers callers: a caller that gets the failure finds it in Stats.
	if ra, ok := resilience.RetryAfter(err); !c.IgnoreRetryAfter && ok && p.clockOf(ra) > now {
		g.failing = !c.BackoffDisabled // after the pause, one attempt at a time
		a.hold(now, p.clockOf(ra), err, false)
		a.noted(now)
		if w != nil {
			w.deliver(created[T]{err: a.createError(err, false)})
		}
		a.failPending(func(*waiter[T]) bool { return true }, true)
		return
	}
	var delay int64
	if d, ok := a.backPressure(err); ok {
		p.counters.backPressure.Add(1)
		if alive := len(a.all); alive > 0 {
			g.limit = min(alive, p.cfg.MaxObjects)
			g.failing = false // the server answers: the limit, not a backoff, governs
			a.hold(now, addSat(now, int64(d)), nil, true)
			a.noted(now)
			// The pool has objects to give back: whoever waited for a
			// creation now waits for those, in the queue.
			if w != nil {
				w.deliver(created[T]{full: true})
			}
			a.failPending(func(*waiter[T]) bool { return false }, false)
			return
		}
		g.growFromAlive = true
		delay = int64(d)
	}
	if c.BackoffDisabled {
		if delay > 0 {
			a.hold(now, addSat(now, delay), nil, true)
		}
		a.noted(now)
		if w != nil {
			w.deliver(created[T]{err: a.createError(err, false)})
		}
		return
	}
	g.failing = true
	if fresh || !g.held {
		g.level++
		a.hold(now, addSat(now, max(delay, int64(c.backoff(g.level)))), nil, delay > 0)
	}
	a.noted(now)
	// With nothing alive to be given back and no other creation in flight,
	// nothing can serve the callers waiting for a creation before the next
	// attempt: they get this failure now, as each would get its own dial's
	// error from a plain driver, and not after waiting out their deadlines
	// (a wrong password, a server that is down). Otherwise they wait for
	// the object or creation that may serve them, bounded by their
	// deadlines; a caller without one gets the failure at once, as it would
	// otherwise wait for ever.
	nothing := len(a.all) == 0 && a.creating == 0
	fail := func(w *waiter[T]) bool { return nothing || w.deadline == 0 }
	switch {
	case w == nil:
	case fail(w): // its own attempt failed
		w.deliver(created[T]{err: a.createError(err, false)})
	default: // first in line for the next attempt
		a.pending = append(a.pending, request[T]{})
		copy(a.pending[1:], a.pending)
		a.pending[0] = request[T]{w: w}
	}
	a.failPending(fail, false)
}

// noted logs the failure (at a bounded rate) and publishes the gate's state.
func (a *actor[T]) noted(now int64) {
	a.logFailure(now)
	a.publishFailure()
	g := &a.gate
	e := Event{Kind: EventCreateFailed, Err: g.lastErr, Failures: g.failures}
	if g.held {
		e.RetryAt = a.p.timeAt(g.retryAt)
	}
	a.p.emit(e, false) // logged at a bounded rate
}

// failPending goes through the requests for a creation after a failure:
// each gives its slot back, those for nobody are dropped, and each caller
// for whom fail is true gets the failure, the others wait on (or, with
// full, wait for a give-back instead). A caller that gets the failure of an
// attempt made while it waited shares that attempt: it does not count as
// failed fast (pause: the failure holds creations, nothing is attempted).
func (a *actor[T]) failPending(fail func(*waiter[T]) bool, pause bool) {
	g := &a.gate
	kept := a.pending[:0]
	for _, r := range a.pending {
		if r.reserved {
			a.freeSlot()
		}
		switch {
		case r.w == nil:
			a.anon--
		case r.w.state.Load() != waiterWaiting:
		case fail(r.w):
			r.w.deliver(created[T]{err: a.createError(g.lastErr, pause)})
		case !g.failing: // back-pressure: wait for a give-back
			r.w.deliver(created[T]{full: true})
		default:
			kept = append(kept, request[T]{w: r.w})
		}
	}
	clear(a.pending[len(kept):])
	a.pending = kept
}

// hopeless reports whether a caller asking for a creation while creations
// fail cannot be served before the next attempt: the gate is held, nothing
// is alive to be given back and nothing is being created. It then fails at
// once with the last failure and when the next attempt is due, whatever its
// deadline, instead of waiting for an attempt that the last failure says
// will fail too.
//
// At or past the retry time the gate counts as open even if the actor has
// not handled its timer yet (a Take and the timer can be ready at once):
// the caller then waits for the attempt the timer starts.
func (a *actor[T]) hopeless() bool {
	g := &a.gate
	return g.held && len(a.all) == 0 && a.creating == 0 && a.p.clock() < g.retryAt
}

// failFast answers w's request at once with the last failure (the caller
// counts it in Stats.FailedFast).
func (a *actor[T]) failFast(w *waiter[T], err error) {
	w.deliver(created[T]{err: a.createError(err, true)})
}

// createError is the error a caller gets for err, the gate's last failure.
func (a *actor[T]) createError(err error, fast bool) *CreateError {
	g := &a.gate
	ce := &CreateError{Err: err, Failures: g.failures, FailedFast: fast}
	if g.held {
		ce.RetryAt = a.p.timeAt(g.retryAt)
	}
	return ce
}

// createSucceeded updates the gate after a creation succeeded; the new
// entry is in a.all.
func (a *actor[T]) createSucceeded() {
	g, maxObjects := &a.gate, a.p.cfg.MaxObjects
	if g.failures > 0 {
		a.p.emit(Event{Kind: EventCreateRecovered, Failures: g.failures}, false) // logged at a bounded rate
		a.logRecovery()
		g.failures, g.level = 0, 0
		g.failing = false
		if g.held && g.pauseErr == nil && !g.heldByBP { // a backoff: over
			a.release()
		}
		a.publishFailure()
	}
	switch alive := len(a.all); {
	case g.growFromAlive:
		g.growFromAlive = false
		g.limit = min(alive, maxObjects)
	case alive > g.limit: // a probe beyond back-pressure's limit succeeded
		g.limit = min(alive, maxObjects)
	}
}

// hold holds the gate from now until at (or later, if it is held longer
// already), failing requests with pauseErr meanwhile when it is not nil; bp
// says back-pressure asked for it.
func (a *actor[T]) hold(now, at int64, pauseErr error, bp bool) {
	g := &a.gate
	if g.held && at <= g.retryAt {
		g.pauseErr = cmp.Or(pauseErr, g.pauseErr)
		g.heldByBP = g.heldByBP || bp
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.held, g.retryAt, g.pauseErr, g.heldByBP = true, at, pauseErr, bp
	if b := a.p.keyed; b != nil { // a Keyed's actor keeps one timer for every key's gate
		b.gatesChanged = true
		return
	}
	g.timer = a.p.cfg.Clock.NewTimer(time.Duration(at - now))
	g.timerC = g.timer.C()
}

// release opens the gate.
func (a *actor[T]) release() {
	g := &a.gate
	if g.timer != nil {
		g.timer.Stop()
	}
	g.held, g.retryAt, g.pauseErr, g.heldByBP, g.timer, g.timerC = false, 0, nil, false, nil, nil
	if b := a.p.keyed; b != nil {
		b.gatesChanged = true
	}
}

// onRetryDue opens the gate when its timer fires: the next creation is a
// probe (one at a time while failing; one beyond limit under
// back-pressure).
func (a *actor[T]) onRetryDue() {
	a.release()
	a.publishFailure()
	a.needRefill = true
	a.startCreates()
}

// backPressure applies Config.BackPressure to err.
func (a *actor[T]) backPressure(err error) (time.Duration, bool) {
	if f := a.p.cfg.BackPressure; f != nil {
		if d, ok := f(err); ok {
			return max(d, 0), true
		}
	}
	return 0, false
}

// publishFailure stores the gate's failure state for callers and Stats.
func (a *actor[T]) publishFailure() {
	g := &a.gate
	if g.lastErr == nil {
		return
	}
	r := &failureRecord{err: g.lastErr, at: g.lastAt, failures: g.failures}
	if g.held {
		r.retryAt = g.retryAt
	}
	a.p.failure.Store(r)
}

// backoff is the delay after the n-th failure in a row: BackoffInitial
// doubled n-1 times, at most BackoffMax, drawn between half of it and all
// of it.
func (c *Config) backoff(n int) time.Duration {
	d := c.BackoffInitial
	for i := 1; i < n && d < c.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.BackoffMax)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// logFailure counts a failure and logs a line if the interval since the
// last line has passed (or there was none): the last error, how many
// failures the line stands for, and what the gate does.
func (a *actor[T]) logFailure(now int64) {
	g := &a.gate
	g.unlogged++
	if g.lineAt != 0 && now-g.lineAt < int64(a.p.cfg.FailureLogInterval) {
		return
	}
	a.logLine(now, false)
}

// logRecovery logs that creations succeed again, if a line may be logged
// now; otherwise the tick reports the failures not logged yet.
func (a *actor[T]) logRecovery() {
	g := &a.gate
	now := a.p.clock()
	if g.lineAt != 0 && now-g.lineAt < int64(a.p.cfg.FailureLogInterval) {
		return
	}
	a.logLine(now, true)
}

// flushFailureLog reports, at a tick, failures no line has reported yet.
func (a *actor[T]) flushFailureLog(now int64) {
	g := &a.gate
	if g.unlogged > 0 && now-g.lineAt >= int64(a.p.cfg.FailureLogInterval) {
		a.logLine(now, g.failures == 0)
	}
}

// logLine logs a failure (at Warn) or a recovery (at Info) with the gate's
// state: the failures since the last line, how many in a row, the last
// error, the next attempt, the effective size.
func (a *actor[T]) logLine(now int64, recovered bool) {
	p, g := a.p, &a.gate
	kind := EventCreateFailed
	if recovered {
		kind = EventCreateRecovered
	}
	args := []any{attrPool, p.cfg.Name, attrEvent, kind.String(), attrFailures, g.unlogged, attrInARow, g.failures, attrError, g.lastErr}
	if g.held {
		args = append(args, attrNextAttemptIn, time.Duration(g.retryAt-now).Round(time.Millisecond))
	}
	if g.limit < p.cfg.MaxObjects {
		args = append(args, attrEffectiveMax, g.limit)
	}
	if recovered {
		args = append(args, attrRecovered, true)
		p.cfg.Logger.Info(kind.message(), args...)
	} else {
		p.cfg.Logger.Warn(kind.message(), args...)
	}
	g.lineAt, g.unlogged = now, 0
}
