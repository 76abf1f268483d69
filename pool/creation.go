package pool

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
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
// Pacing: while objects are alive, which their callers may give back before
// a new one is made, a creation waits for the ones in flight beyond ramp
// (see paced). A caller waiting for such a creation also takes the first
// object given back, and leaves its request, which is then dropped: a
// spike that the objects given back serve costs one creation, not one per
// caller (HikariCP-benchmark's SpikeLoadTest: 5 objects held, 45 callers,
// 150 ms creations, 2 ms holds). Each creation that ends for a caller still
// waiting (the objects given back did not serve it) lets one more run at
// once, so a lasting demand doubles the creations in flight every creation
// time (1, 2, 4, … as TCP's slow start); one made for a caller who left,
// or for the last caller waiting, sets ramp back to one. With nothing
// alive, every request starts at once: nothing can be given back; nor is
// a creation held back while the callers waiting would wait longer for
// objects given back than for a creation (drainsSlowly).
//
// Every field is the actor's.
type createGate struct {
	ramp     int   // creations that may run at once while objects are alive (0 counts as 1)
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

	// Logging (see logFailure): lineAt is the clock of the last line at
	// Warn or Info (0: none yet), unlogged the failures since; warned is
	// set while the run of failures has been logged at Warn and its end
	// not yet at Info, recoveryUnlogged once that end came too soon after
	// lineAt for a line.
	lineAt           int64
	unlogged         int
	warned           bool
	recoveryUnlogged bool
}

// failureRecord is what callers and Stats see of the gate.
type failureRecord struct {
	err      error // the last failure, as the factory returned it
	stat     error // err as Stats.LastCreateError shows it
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
	g, maxObjects := &a.gate, a.maxObjects
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
	return !a.closing && !g.held && a.creating < a.p.cfg.MaxConcurrentCreates && !(g.failing && a.creating > 0) && !a.paced()
}

// paced reports whether a creation must wait for those in flight (see
// Pacing above): objects are alive and ramp creations run already. The
// creations in flight end, each with startCreates, so that a request it
// holds back is looked at again.
func (a *actor[T]) paced() bool {
	return a.creating >= max(a.gate.ramp, 1) && len(a.all) > 0 && !a.drainsSlowly()
}

// drainsSlowly reports whether the callers waiting would wait longer for
// objects given back than for a new one: their number times the mean hold
// (measured by the overload policy), shared by the objects alive, exceeds
// the mean creation time. Objects given back then cannot serve the demand
// in time, and pacing would only hold back the creations that can (a
// warm-up under load, where a creation takes a second and a hold a tenth
// of one); a spike of short holds (2 ms holds, 150 ms creations) is still
// paced. False until both are measured (the hold as the overload policy
// trusts it: holdWeight samples).
func (a *actor[T]) drainsSlowly() bool {
	hold, create := a.p.overload.hold.Load(), a.createTime
	if a.p.overload.samples.Load() < holdWeight || create == 0 {
		return false // the hold is not measured enough yet (see holdWeight)
	}
	return a.p.waiting.Load()*hold/int64(len(a.all)) > create
}

// createTook folds the run of a creation that succeeded into createTime.
func (a *actor[T]) createTook(took int64) {
	took = max(took, 1)
	if a.createTime == 0 {
		a.createTime = took
		return
	}
	a.createTime += (took - a.createTime) / holdWeight // weighed as the hold it is compared with
}

// paceCreated moves ramp after a creation for w (nil: for nobody, which
// says nothing of demand) succeeded: up by one while w still waits and
// others do (requests for a creation pending or in flight: the actor's own
// count, not Pool.waiting, which callers served a moment ago may not have
// left yet); back to one when w has left, served by an object given back,
// or is the last caller waiting, so that the next spike starts from one
// again.
func (a *actor[T]) paceCreated(w *waiter[T]) {
	g := &a.gate
	switch {
	case w == nil:
	case w.state.Load() == waiterWaiting && (len(a.pending) > 0 || a.creating > 0):
		g.ramp = min(max(g.ramp, 1)+1, a.maxObjects)
	default:
		g.ramp = 1
	}
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
	persists := fresh && g.failures > 1 // a creation started after the last failure failed too
	g.lastErr, g.lastAt = err, now
	// Each branch holds the gate, then logs and publishes (noted; the log
	// says whether a caller gets the failure, see logFailure), then answers
	// callers: a caller that gets the failure finds it in Stats.
	if ra, ok := resilience.RetryAfter(err); !c.IgnoreRetryAfter && ok && p.clockOf(ra) > now && !errors.Is(err, ErrBudgetExhausted) {
		g.failing = !c.BackoffDisabled // after the pause, one attempt at a time
		a.hold(now, p.clockOf(ra), err, false)
		all := func(*waiter[T]) bool { return true }
		a.noted(now, w != nil || a.anyPending(all), persists)
		if w != nil {
			w.deliver(created[T]{err: a.createError(err, false)})
		}
		a.failPending(all, true)
		return
	}
	var delay int64
	if d, ok := a.backPressure(err); ok {
		p.counters.backPressure.Add(1)
		// With no slot free in a shared Budget, objects will be given back
		// elsewhere if not here: the pool holds even with none alive
		// (limit 0), its callers queue for the next probe, and nothing
		// backs off.
		if alive := len(a.all); alive > 0 || errors.Is(err, ErrBudgetExhausted) {
			g.limit = min(alive, a.maxObjects)
			g.failing = false // the server answers: the limit, not a backoff, governs
			a.hold(now, addSat(now, int64(d)), nil, true)
			a.noted(now, false, persists)
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
		a.noted(now, w != nil, persists)
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
	a.noted(now, w != nil && fail(w) || a.anyPending(fail), persists)
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

// noted logs the failure (see logFailure: told says whether a caller gets
// it, persists whether the run persists), publishes the gate's state and
// capacity, which the callers it wakes read, and sends its event.
func (a *actor[T]) noted(now int64, told, persists bool) {
	a.logFailure(now, told, persists)
	a.publishFailure()
	a.publishCapacity()
	g := &a.gate
	e := Event{Kind: EventCreateFailed, Err: g.lastErr, Failures: g.failures}
	if g.held {
		e.RetryAt = a.p.timeAt(g.retryAt)
	}
	a.p.emit(e, false) // logged by logFailure
}

// anyPending reports whether a caller waiting for a creation is one for
// whom fail is true: failPending gives it the failure.
func (a *actor[T]) anyPending(fail func(*waiter[T]) bool) bool {
	for _, r := range a.pending {
		if r.w != nil && r.w.state.Load() == waiterWaiting && fail(r.w) {
			return true
		}
	}
	return false
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

// createSucceeded updates the gate after a creation for w (nil: for
// nobody) succeeded; the new entry is in a.all.
func (a *actor[T]) createSucceeded(w *waiter[T]) {
	a.paceCreated(w)
	g, maxObjects := &a.gate, a.maxObjects
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
	if errors.Is(err, ErrBudgetExhausted) { // the server was not asked: the budget says what back-pressure would
		return budgetProbe, true
	}
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
	r := &failureRecord{err: g.lastErr, stat: &lastCreateError{g.lastErr}, at: g.lastAt, failures: g.failures}
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

// The log of creations has one line per state, not one per attempt:
//
//   - The first failure of a run that a caller got is that caller's to
//     report (a program that logs its errors would print it twice, a WARN
//     line of the pool and its own): it is logged at Debug.
//   - A run that persists (a creation started after the last failure
//     failed too: the attempt after the backoff, or with the backoff off
//     the next one) and a failure nobody got (a creation for MinIdle, one
//     whose callers wait on, back-pressure) are logged at Warn at once;
//     then at most one line per LogInterval, each standing for the
//     failures since the last.
//   - The end of a run logged at Warn is logged at Info (with the same
//     bound: a tick reports one that came too soon); the end of a run that
//     was not, at Debug.

// logFailure logs a failure as the list above says: told is whether a
// caller got it, persists whether the run persists.
func (a *actor[T]) logFailure(now int64, told, persists bool) {
	g := &a.gate
	g.unlogged++
	switch {
	case g.warned:
		if now-g.lineAt >= int64(a.p.cfg.FailureLogInterval) {
			a.logLine(now, false)
		}
	case told && !persists:
		if g.failures == 1 {
			a.logDebug(EventCreateFailed)
		}
	default:
		a.logLine(now, false)
	}
}

// logRecovery logs that creations succeed again: at Debug after a run not
// logged at Warn; else at Info if a line may be logged now, otherwise the
// tick reports it.
func (a *actor[T]) logRecovery() {
	g := &a.gate
	if !g.warned {
		a.logDebug(EventCreateRecovered)
		g.unlogged = 0
		return
	}
	now := a.p.clock()
	if now-g.lineAt < int64(a.p.cfg.FailureLogInterval) {
		g.recoveryUnlogged = true
		return
	}
	a.logLine(now, true)
}

// flushFailureLog reports, at a tick, what no line of a run logged at Warn
// has reported yet: failures, or its end.
func (a *actor[T]) flushFailureLog(now int64) {
	g := &a.gate
	if g.warned && (g.unlogged > 0 || g.recoveryUnlogged) && now-g.lineAt >= int64(a.p.cfg.FailureLogInterval) {
		a.logLine(now, g.failures == 0)
	}
}

// logLine logs a failure (at Warn) or a recovery (at Info) with the gate's
// state: the failures since the last line, how many in a row, the last
// error, the next attempt, the effective size.
func (a *actor[T]) logLine(now int64, recovered bool) {
	g := &a.gate
	level := slog.LevelWarn
	if recovered {
		level = slog.LevelInfo
	}
	a.logGate(now, recovered, level, attrFailures, g.unlogged)
	g.lineAt, g.unlogged = now, 0
	g.warned, g.recoveryUnlogged = !recovered, false
}

// logDebug logs, at Debug, the first failure of a run that its caller got,
// or the end of a run that was not logged at Warn.
func (a *actor[T]) logDebug(kind EventKind) {
	if !a.p.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	if kind == EventCreateRecovered {
		a.logGate(a.p.clock(), true, slog.LevelDebug, attrFailures, a.gate.failures)
		return
	}
	a.logGate(a.p.clock(), false, slog.LevelDebug)
}

// logGate logs a line of the gate's state at level, with extra attributes.
func (a *actor[T]) logGate(now int64, recovered bool, level slog.Level, extra ...any) {
	p, g := a.p, &a.gate
	kind := EventCreateFailed
	if recovered {
		kind = EventCreateRecovered
	}
	args := append([]any{attrPool, p.cfg.Name, attrEvent, kind.String()}, extra...)
	args = append(args, attrInARow, g.failures, attrError, g.lastErr)
	if g.held {
		args = append(args, attrNextAttemptIn, time.Duration(g.retryAt-now).Round(time.Millisecond))
	}
	if g.limit < a.maxObjects {
		args = append(args, attrEffectiveMax, g.limit)
	}
	if recovered {
		args = append(args, attrRecovered, true)
	}
	p.cfg.Logger.Log(context.Background(), level, kind.message(), args...)
}
