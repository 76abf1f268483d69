package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Breaker is a circuit breaker; it is a resilience.Guard. Make one with New.
type Breaker struct {
	c        Config // validated, defaults filled in; read-only
	epoch    time.Time
	needNow  bool // Exit reads the clock: slow calls or a time window
	adaptive bool

	word atomic.Uint64             // the current word: state and generation
	win  atomic.Pointer[windowBox] // the recording states' window, new with each of them

	mu         sync.Mutex // guards the following fields and every transition
	openUntil  int64      // Open: when it half-opens
	openings   int        // openings in a row, for OpenDelay; 0 once closed
	lastDelay  time.Duration
	half       halfOpen
	throttle   *timeWindow // adaptive: calls are requests, failures are accepts
	rejected   atomic.Uint64
	transition atomic.Uint64

	// midPublish, when not nil, is called by a transition between storing
	// the new generation's window and its word, so that a test can run an
	// Exit in between. It is set only by package-internal tests, before
	// use.
	midPublish func()
}

// windowBox lets an interface sit behind an atomic.Pointer, with the
// generation whose outcomes it records. A transition stores the new window
// before the new word, so an Exit that has checked its permit against the
// word may still load the next generation's window: it compares gen too,
// which costs no lock and no allocation.
type windowBox struct {
	window
	gen uint64
}

// halfOpen is the HalfOpen state's count of its trial calls.
type halfOpen struct {
	since                int64 // when it began
	left                 int   // permits not yet handed out
	done, failures, slow int
}

// New returns a Breaker configured by c, Closed, or a
// *resilience.ConfigError.
func New(c Config) (*Breaker, error) {
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	b := &Breaker{c: c, epoch: c.Clock.Now(), adaptive: c.Mode == Adaptive}
	b.needNow = c.SlowCallDuration > 0 || c.Window == TimeWindow
	if b.adaptive {
		b.throttle = newTimeWindow(int64(c.WindowDuration), c.WindowBuckets)
	}
	b.win.Store(b.newWindow(1))
	b.word.Store(uint64(makeWord(1, Closed)))
	return b, nil
}

var _ resilience.Guard = (*Breaker)(nil)

// newWindow returns an empty window for generation gen.
func (b *Breaker) newWindow(gen uint64) *windowBox {
	if b.c.Window == TimeWindow {
		return &windowBox{newTimeWindow(int64(b.c.WindowDuration), b.c.WindowBuckets), gen}
	}
	return &windowBox{newCountWindow(b.c.WindowSize), gen}
}

func (b *Breaker) nanos(t time.Time) int64 { return int64(t.Sub(b.epoch)) }
func (b *Breaker) time(n int64) time.Time  { return b.epoch.Add(time.Duration(n)) }
func (b *Breaker) now() int64              { return b.nanos(b.c.Clock.Now()) }
func (b *Breaker) load() word              { return word(b.word.Load()) }

// Enter admits a call or rejects it with a *resilience.RejectedError
// matching ErrOpen, ErrHalfOpenFull, ErrForcedOpen or ErrThrottled. ctx is
// not waited on: a breaker never waits.
func (b *Breaker) Enter(_ context.Context) (resilience.Permit, error) {
	w := b.load()
	switch w.state() {
	case Closed, ForcedClosed, MetricsOnly:
		if b.adaptive && w.state() == Closed {
			return b.enterAdaptive(w)
		}
		p := resilience.Permit{Token: uint64(w)}
		if b.c.SlowCallDuration > 0 {
			p.Since = b.now()
		}
		return p, nil
	case Disabled:
		return resilience.Permit{Token: uint64(w)}, nil
	}
	return b.enterSlow()
}

// enterSlow decides under the lock for Open, HalfOpen and ForcedOpen.
func (b *Breaker) enterSlow() (resilience.Permit, error) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	w := b.load()
	switch w.state() {
	case Open:
		return resilience.Permit{}, b.rejectLocked(now, ErrOpen, b.time(b.openUntil))
	case HalfOpen:
		if b.half.left == 0 {
			return resilience.Permit{}, b.rejectLocked(now, ErrHalfOpenFull, b.halfOpenRetryAtLocked(now))
		}
		b.half.left--
		return resilience.Permit{Token: uint64(w), Since: now}, nil
	case ForcedOpen:
		return resilience.Permit{}, b.rejectLocked(now, ErrForcedOpen, time.Time{})
	}
	return resilience.Permit{Token: uint64(w), Since: now}, nil // moved on meanwhile
}

// Check reports whether Enter would admit a call now, without admitting
// one: nil, or the rejection Enter would return (counted and emitted as
// one). It takes no HalfOpen trial permit, so that a caller may ask before
// work that enters the breaker itself, such as taking a connection that may
// have to be made through it. The Adaptive mode's Closed state admits
// (its throttling is drawn at Enter). With the circuit Closed it reads one
// atomic word.
func (b *Breaker) Check() error {
	switch b.load().state() {
	case Open, HalfOpen, ForcedOpen:
	default:
		return nil
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	switch b.load().state() {
	case Open:
		return b.rejectLocked(now, ErrOpen, b.time(b.openUntil))
	case HalfOpen:
		if b.half.left == 0 {
			return b.rejectLocked(now, ErrHalfOpenFull, b.halfOpenRetryAtLocked(now))
		}
	case ForcedOpen:
		return b.rejectLocked(now, ErrForcedOpen, time.Time{})
	}
	return nil
}

// halfOpenRetryAtLocked is when a call rejected for want of a trial permit
// may come back: after an open delay (the first one when the circuit was
// moved to HalfOpen by hand, without opening), or unknown.
func (b *Breaker) halfOpenRetryAtLocked(now int64) time.Time {
	d := b.lastDelay
	if d <= 0 {
		d = b.c.OpenDelay.Delay(1, 0, nil)
	}
	if d <= 0 {
		return time.Time{}
	}
	return b.time(now).Add(d)
}

func (b *Breaker) rejectLocked(now int64, reason error, retryAt time.Time) error {
	b.rejected.Add(1)
	err := resil.Reject(mechanism, b.c.Name, reason, b.time(now), retryAt)
	resil.Emit(b.c.Listener, resilience.Event{Time: err.At, Mechanism: mechanism, Name: b.c.Name,
		Kind: resilience.EventRejected, RetryAt: retryAt, Err: err})
	return err
}

// advanceLocked makes the time-driven transitions due by now: HalfOpen
// back to Open once HalfOpenMaxWait has passed, as of the time it passed
// (so the open delay runs from then, as if a timer had fired); Open to
// HalfOpen once the delay has ended, as of now: the trials begin with the
// first call that comes.
func (b *Breaker) advanceLocked(now int64) {
	if maxWait := int64(b.c.HalfOpenMaxWait); maxWait > 0 && b.load().state() == HalfOpen && now-b.half.since >= maxWait {
		b.toLocked(Open, b.half.since+maxWait)
	}
	if b.load().state() == Open && now >= b.openUntil {
		b.toLocked(HalfOpen, now)
	}
}

// Exit records the outcome of the call p admitted.
func (b *Breaker) Exit(p resilience.Permit, err error) {
	w := word(p.Token)
	switch w.state() {
	case Disabled:
		return
	case Closed, ForcedClosed, MetricsOnly, HalfOpen:
	default:
		return
	}
	o, ok := b.classify(err)
	var now int64
	if b.needNow || b.adaptive || w.state() == HalfOpen {
		now = b.now()
		if b.c.SlowCallDuration > 0 && ok && now-p.Since >= int64(b.c.SlowCallDuration) {
			o |= slow
		}
	}
	if b.adaptive && w.state() == Closed {
		b.exitAdaptive(p, o, ok, now)
		return
	}
	if w.state() == HalfOpen {
		b.exitHalfOpen(w, o, ok, now)
		return
	}
	if !ok || b.word.Load() != p.Token {
		return // ignored, or admitted before a transition
	}
	win := b.win.Load()
	if win.gen != w.gen() {
		return // a transition is storing its word: the window is the next generation's
	}
	t, changed := win.record(o, now)
	if changed && w.state() != ForcedClosed && b.crossed(t, b.c.MinimumCalls) {
		b.tripped(w, now, t)
	}
}

// classify maps an error to an outcome; ok is false when it is not
// recorded.
func (b *Breaker) classify(err error) (o outcome, ok bool) {
	if err == nil {
		return recorded, true
	}
	if errors.Is(err, resilience.ErrRejected) || b.c.IsIgnored(err) {
		return 0, false
	}
	if b.c.IsFailure(err) {
		return recorded | failed, true
	}
	return recorded, true
}

// crossed reports whether t reaches a threshold.
func (b *Breaker) crossed(t tally, minCalls int) bool {
	if t.calls == 0 || t.calls < int64(minCalls) {
		return false
	}
	n := float64(t.calls)
	return float64(t.failures)/n >= b.c.FailureRate ||
		(b.c.SlowCallDuration > 0 && float64(t.slow)/n >= b.c.SlowCallRate)
}

// tripped acts on a window that crossed a threshold in generation w.
func (b *Breaker) tripped(w word, now int64, t tally) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.load() != w {
		return
	}
	if w.state() == MetricsOnly {
		resil.Emit(b.c.Listener, resilience.Event{Time: b.time(now), Mechanism: mechanism, Name: b.c.Name,
			Kind: resilience.EventThreshold, Err: thresholdError(t)})
		b.win.Store(b.newWindow(w.gen()))
		return
	}
	if !b.needNow {
		now = b.now()
	}
	b.toLocked(Open, now)
}

func (b *Breaker) exitHalfOpen(w word, o outcome, ok bool, now int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now) // HalfOpenMaxWait may have passed: then the trial is late
	if b.load() != w {
		return
	}
	if !ok { // not a trial: give the permit back
		b.half.left++
		return
	}
	b.half.done++
	b.half.failures += int(o.failures())
	b.half.slow += int(o.slows())
	if b.half.done < b.c.HalfOpenCalls {
		return
	}
	if b.crossed(tally{calls: int64(b.half.done), failures: int64(b.half.failures), slow: int64(b.half.slow)}, 1) {
		b.toLocked(Open, now)
	} else {
		b.toLocked(Closed, now)
	}
}

// toLocked moves to s, starting a new generation.
func (b *Breaker) toLocked(s State, now int64) {
	from := b.load()
	switch s {
	case Open:
		b.openings++
		b.lastDelay = b.c.OpenDelay.Delay(b.openings, b.lastDelay, nil)
		b.openUntil = now + min(int64(b.lastDelay), math.MaxInt64-now) // saturated
	case HalfOpen:
		b.half = halfOpen{since: now, left: b.c.HalfOpenCalls}
	case Closed:
		b.openings = 0
	}
	b.publishLocked(from, s)
	e := resilience.Event{Time: b.time(now), Mechanism: mechanism, Name: b.c.Name,
		Kind: resilience.EventStateChange, From: from.state().String(), To: s.String()}
	if s == Open {
		e.Delay, e.RetryAt = b.lastDelay, b.time(b.openUntil)
	}
	resil.Emit(b.c.Listener, e)
}

// publishLocked starts the generation after from's, in state s: a state
// that records outcomes (Closed, ForcedClosed, MetricsOnly) gets a fresh
// window, stored before the word that admits calls into it.
func (b *Breaker) publishLocked(from word, s State) {
	if s.records() {
		b.win.Store(b.newWindow(from.gen() + 1))
	}
	if b.midPublish != nil {
		b.midPublish()
	}
	b.word.Store(uint64(makeWord(from.gen()+1, s)))
	b.transition.Add(1)
}

// State returns the current state, making any transition due first.
func (b *Breaker) State() State {
	if s := b.load().state(); s != Open && s != HalfOpen {
		return s
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	return b.load().state()
}

// TransitionTo moves the breaker to s as an automatic transition would
// (to Open: the next OpenDelay; to Closed: a fresh window). In Adaptive
// mode Open and HalfOpen return ErrState.
func (b *Breaker) TransitionTo(s State) error {
	if s >= numStates || (b.adaptive && (s == Open || s == HalfOpen)) {
		return ErrState
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.toLocked(s, now)
	return nil
}

// Reset returns the breaker to a fresh Closed: an empty window, no
// openings in a row.
func (b *Breaker) Reset() {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.openings, b.lastDelay = 0, 0
	if b.throttle != nil {
		b.throttle = newTimeWindow(int64(b.c.WindowDuration), b.c.WindowBuckets)
	}
	from := b.load()
	b.publishLocked(from, Closed)
	resil.Emit(b.c.Listener, resilience.Event{Time: b.time(now), Mechanism: mechanism, Name: b.c.Name,
		Kind: resilience.EventReset, From: from.state().String(), To: Closed.String()})
}

// Stats is a snapshot of a Breaker.
type Stats struct {
	State State
	// The window's calls, failures and slow calls (Closed, ForcedClosed,
	// MetricsOnly), or the trial calls' (HalfOpen). Adaptive mode: Calls
	// are the requests and Accepts the successes of its window.
	Calls, Failures, SlowCalls, Accepts int64
	FailureRate, SlowCallRate           float64
	// RejectProbability is the adaptive mode's current rejection
	// probability.
	RejectProbability float64
	OpenUntil         time.Time // when Open ends
	Openings          int       // openings in a row
	Rejected          uint64    // calls rejected, ever
	Transitions       uint64    // transitions and resets, ever
}

// Stats returns a snapshot, making any transition due first.
func (b *Breaker) Stats() Stats {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	s := Stats{State: b.load().state(), Openings: b.openings,
		Rejected: b.rejected.Load(), Transitions: b.transition.Load()}
	var t tally
	switch {
	case b.adaptive:
		t = b.throttle.tally(now)
		s.Calls, s.Accepts = t.calls, t.failures
		s.RejectProbability = b.rejectProbability(t)
		return s
	case s.State == HalfOpen:
		t = tally{calls: int64(b.half.done), failures: int64(b.half.failures), slow: int64(b.half.slow)}
	case s.State == Open:
		s.OpenUntil = b.time(b.openUntil)
	default:
		t = b.win.Load().tally(now)
	}
	s.Calls, s.Failures, s.SlowCalls = t.calls, t.failures, t.slow
	if t.calls > 0 {
		s.FailureRate = float64(t.failures) / float64(t.calls)
		s.SlowCallRate = float64(t.slow) / float64(t.calls)
	}
	return s
}

// enterAdaptive rejects with the SRE probability over the calls before
// this one (a fresh window rejects nothing), counting every call, rejected
// or not, as a request.
func (b *Breaker) enterAdaptive(w word) (resilience.Permit, error) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	tw := b.throttle
	tw.advanceLocked(now)
	p := b.rejectProbability(tw.total)
	tw.addLocked(now, 1, 0, 0)
	if p > 0 && b.random() < p {
		return resilience.Permit{}, b.rejectLocked(now, ErrThrottled, b.time(now+tw.width))
	}
	return resilience.Permit{Token: uint64(w), Since: now}, nil
}

// exitAdaptive counts an accept, or takes the request back when its outcome
// is not recorded (ignored, or rejected inside: the service said nothing).
func (b *Breaker) exitAdaptive(p resilience.Permit, o outcome, ok bool, now int64) {
	if ok && o&failed != 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.word.Load() != p.Token {
		return // admitted before Reset or a manual transition: another window
	}
	if ok {
		b.throttle.addLocked(now, 0, 1, 0) // an accept
	} else {
		b.throttle.takeBackLocked(p.Since, now)
	}
}

// rejectProbability is max(0, (requests − K·accepts) / (requests + 1)).
func (b *Breaker) rejectProbability(t tally) float64 {
	return max(0, (float64(t.calls)-b.c.ThrottleK*float64(t.failures))/float64(t.calls+1))
}

func (b *Breaker) random() float64 {
	if b.c.Rand != nil {
		return b.c.Rand()
	}
	return rand.Float64()
}

// thresholdError describes a crossed threshold for EventThreshold.
func thresholdError(t tally) error {
	return fmt.Errorf("breaker: threshold reached: %d failures and %d slow calls in %d calls", t.failures, t.slow, t.calls)
}
