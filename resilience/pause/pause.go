package pause

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// gate is the state of the gate.
type gate int32

const (
	open         gate = iota // calls pass
	paused                   // closed until until
	probePending             // the pause is over; the next caller is the probe
	probing                  // the probe runs; the others wait for its outcome
)

// Pause is a pool-wide pause; it is a resilience.Guard. Make one with New.
type Pause struct {
	c    Config // validated, defaults filled in; read-only
	gate atomic.Int32

	mu         sync.Mutex // guards the following fields
	until      time.Time  // when the pause ends (paused)
	reason     error
	last       time.Duration // the length of the last pause
	reopenedAt time.Time     // when the last probe was let through
	probeGen   uint64        // the probe role handed out last; only its holder's outcome counts
	waiters    []*waiter     // FIFO
	timer      clock.Timer
	pauses     uint64
	escalated  uint64
}

// verdict is what a waiter is told when it leaves the queue: goAhead,
// rejected, or the generation of the probe role it is given.
type verdict uint64

const (
	goAhead  verdict = 0              // the gate opened
	rejected verdict = math.MaxUint64 // the gate closed again, longer than the waiter can wait
)

type waiter struct {
	ch       chan verdict // buffered: sends never block
	deadline time.Time    // see deadlineOf; read-only
	// Set before rejected is sent: the pause that rejected the waiter.
	until  time.Time
	reason error
}

// The Token of a probe's Permit; its Since is the probe's generation.
const probeToken = 1

// New returns a Pause configured by c, open, or a *resilience.ConfigError.
func New(c Config) (*Pause, error) {
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	return &Pause{c: c}, nil
}

var _ resilience.Guard = (*Pause)(nil)

// Enter passes at once while the gate is open; otherwise it waits behind
// the gate (FIFO) until the gate opens or the caller is chosen as the
// probe, or ctx ends.
func (p *Pause) Enter(ctx context.Context) (resilience.Permit, error) {
	if gate(p.gate.Load()) == open {
		return resilience.Permit{}, nil
	}
	return p.enterSlow(ctx)
}

func (p *Pause) enterSlow(ctx context.Context) (resilience.Permit, error) {
	now := p.c.Clock.Now()
	p.mu.Lock()
	if gate(p.gate.Load()) == paused && !now.Before(p.until) {
		p.reopenLocked(now) // the timer has not fired yet
	}
	switch gate(p.gate.Load()) {
	case open:
		p.mu.Unlock()
		return resilience.Permit{}, nil
	case probePending:
		p.gate.Store(int32(probing))
		p.probeGen++
		gen := p.probeGen
		p.emitProbeLocked(now)
		p.mu.Unlock()
		return permitFor(verdict(gen)), nil
	}
	// Paused, or a probe runs: wait, unless the caller cannot wait that long.
	deadline := p.deadlineOf(ctx)
	if gate(p.gate.Load()) == paused && p.cannotWaitLocked(deadline) {
		until, reason := p.until, p.reason
		p.mu.Unlock()
		return resilience.Permit{}, p.reject(now, until, reason)
	}
	w := &waiter{ch: make(chan verdict, 1), deadline: deadline}
	p.waiters = append(p.waiters, w)
	waiting := len(p.waiters)
	p.mu.Unlock()
	resil.Emit(p.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: p.c.Name,
		Kind: resilience.EventQueued, Waiting: waiting})
	var v verdict
	select {
	case v = <-w.ch:
		if v == rejected {
			return resilience.Permit{}, p.reject(p.c.Clock.Now(), w.until, w.reason)
		}
		if ctx.Err() == nil {
			return permitFor(v), nil
		}
		p.mu.Lock() // ended as well: the context wins, whichever select saw first
	case <-ctx.Done():
		p.mu.Lock()
		if i := slices.Index(p.waiters, w); i >= 0 {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			p.mu.Unlock()
			return resilience.Permit{}, context.Cause(ctx)
		}
		v = <-w.ch // told something meanwhile
	}
	defer p.mu.Unlock()
	// A probe role still current passes on to the next waiter (one
	// superseded by a new pause is void).
	if pm := permitFor(v); v != rejected && p.currentProbeLocked(pm) {
		p.passProbeLocked(p.c.Clock.Now())
	}
	return resilience.Permit{}, context.Cause(ctx)
}

// deadlineOf returns ctx's deadline when the gate's clock is the system's
// (a context's deadline is in real time), or zero.
func (p *Pause) deadlineOf(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok && resil.IsSystem(p.c.Clock) {
		return dl
	}
	return time.Time{}
}

// cannotWaitLocked reports whether a caller whose deadline is deadline
// (zero: none) is rejected by the closed gate rather than held until it
// opens: always with Config.NoWait, else when its deadline comes first.
func (p *Pause) cannotWaitLocked(deadline time.Time) bool {
	return p.c.NoWait || (!deadline.IsZero() && deadline.Before(p.until))
}

// reject returns the rejection of a caller by the gate closed until until
// for reason, and emits it.
func (p *Pause) reject(now, until time.Time, reason error) error {
	err := resil.Reject(mechanism, p.c.Name, ErrPaused, now, until)
	resil.Emit(p.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: p.c.Name,
		Kind: resilience.EventRejected, RetryAt: until, Err: errors.Join(err, reason)})
	return err
}

func permitFor(v verdict) resilience.Permit {
	if v != goAhead {
		return resilience.Permit{Token: probeToken, Since: int64(v)}
	}
	return resilience.Permit{}
}

// currentProbeLocked reports whether pm is the probe the gate waits for:
// not one whose pause was superseded by another signal meanwhile.
func (p *Pause) currentProbeLocked(pm resilience.Permit) bool {
	return pm.Token == probeToken && uint64(pm.Since) == p.probeGen && gate(p.gate.Load()) == probing
}

// Exit closes or extends the gate when err is a slow-down signal; the
// current probe's other outcomes open it (a probe whose pause was
// superseded by another signal while it ran says nothing of the new one).
func (p *Pause) Exit(pm resilience.Permit, err error) {
	if err == nil && pm.Token != probeToken {
		return
	}
	if err != nil && p.c.Classify != nil {
		if d, ok := p.c.Classify(err); ok {
			p.hold(d, err, pm)
			return
		}
	}
	if pm.Token != probeToken {
		return
	}
	now := p.c.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.currentProbeLocked(pm) {
		return // paused again meanwhile by another signal
	}
	if inconclusive(err) {
		p.passProbeLocked(now) // the probe never reached the server
		return
	}
	p.openLocked(now)
}

// inconclusive reports whether a probe's error says nothing about the
// server: it never ran, or its caller gave up.
func inconclusive(err error) bool {
	return errors.Is(err, resilience.ErrRejected) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Hold closes the gate for d (or extends it to now+d), as a classified
// error would; reason says why.
func (p *Pause) Hold(d time.Duration, reason error) { p.hold(d, reason, resilience.Permit{}) }

// End ends a pause now, as if its time had come: the first caller waiting,
// or else the next caller, is the probe, whose outcome opens the gate or
// closes it again. For a caller that knows the reason of the pause is
// gone (a failover to another server); on a gate that is not paused it
// does nothing.
func (p *Pause) End() {
	now := p.c.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if gate(p.gate.Load()) != paused {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.until = now
	p.reopenLocked(now)
}

// hold closes or extends the gate on a signal met by the call pm admitted.
func (p *Pause) hold(d time.Duration, reason error, pm resilience.Permit) {
	now := p.c.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdLocked(now, d, reason, p.currentProbeLocked(pm))
}

// holdLocked closes the gate until now+d, or extends it; fromProbe says the
// signal is the current probe's outcome.
func (p *Pause) holdLocked(now time.Time, d time.Duration, reason error, fromProbe bool) {
	c := &p.c
	if d <= 0 {
		d = c.DefaultPause
	}
	g := gate(p.gate.Load())
	window := c.EscalationWindow
	if window == 0 {
		window = p.last
	}
	again := fromProbe || (g != paused && !p.reopenedAt.IsZero() && now.Sub(p.reopenedAt) < window)
	if again && c.Escalation > 1 {
		grown := c.MaxPause // saturated: float64(math.MaxInt64) is out of range
		if g := float64(p.last) * c.Escalation; g < float64(c.MaxPause) {
			grown = time.Duration(g)
		}
		d = max(d, grown)
		p.escalated++
	}
	d = min(d, c.MaxPause)
	until := now.Add(d)
	if g == paused && !until.After(p.until) {
		return // within the pause already set: never shortened
	}
	p.until, p.reason, p.last = until, reason, d
	p.pauses++
	if g != paused {
		p.gate.Store(int32(paused))
	}
	if p.timer == nil {
		p.timer = c.Clock.AfterFunc(d, p.reopen)
	} else {
		p.timer.Reset(d)
	}
	p.rejectWaitersLocked()
	resil.Emit(c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: c.Name, Kind: resilience.EventPaused,
		Delay: d, RetryAt: until, Waiting: len(p.waiters), Err: reason})
}

// rejectWaitersLocked rejects the waiters that cannot wait for the gate,
// just closed or closed longer, to open (cannotWaitLocked): every one with
// Config.NoWait (they queued behind the probe), else those whose deadline
// now falls before the opening. The others keep their order.
func (p *Pause) rejectWaitersLocked() {
	p.waiters = slices.DeleteFunc(p.waiters, func(w *waiter) bool {
		if !p.cannotWaitLocked(w.deadline) {
			return false
		}
		w.until, w.reason = p.until, p.reason
		w.ch <- rejected
		return true
	})
}

// reopen runs when the pause timer fires.
func (p *Pause) reopen() {
	now := p.c.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if gate(p.gate.Load()) == paused && !now.Before(p.until) {
		p.reopenLocked(now)
	}
}

// reopenLocked ends a pause: the first waiter, or else the next caller, is
// the probe.
func (p *Pause) reopenLocked(now time.Time) {
	p.reopenedAt = now
	p.gate.Store(int32(probePending))
	p.passProbeLocked(now)
}

// passProbeLocked gives the probe role to the first waiter, or leaves it to
// the next caller.
func (p *Pause) passProbeLocked(now time.Time) {
	if len(p.waiters) == 0 {
		p.gate.Store(int32(probePending))
		return
	}
	w := p.waiters[0]
	p.waiters = slices.Delete(p.waiters, 0, 1)
	p.gate.Store(int32(probing))
	p.probeGen++
	w.ch <- verdict(p.probeGen)
	p.emitProbeLocked(now)
}

func (p *Pause) emitProbeLocked(now time.Time) {
	resil.Emit(p.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: p.c.Name,
		Kind: resilience.EventProbe, Waiting: len(p.waiters)})
}

// openLocked opens the gate and lets every waiter through, in order.
func (p *Pause) openLocked(now time.Time) {
	p.gate.Store(int32(open))
	waiting := len(p.waiters)
	for _, w := range p.waiters {
		w.ch <- goAhead
	}
	p.waiters = nil
	p.reason = nil
	resil.Emit(p.c.Listener, resilience.Event{Time: now, Mechanism: mechanism, Name: p.c.Name,
		Kind: resilience.EventResumed, Waiting: waiting})
}

// Stop stops the reopening timer, if any: for a Pause that is dropped while
// paused. Waiters keep waiting until their contexts end.
func (p *Pause) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
}

// State is a snapshot of a Pause.
type State struct {
	Open        bool          // calls pass
	Probing     bool          // the pause is over and a probe runs or is about to
	Until       time.Time     // when the current or last pause ends
	Reason      error         // the signal behind the current pause; nil when open
	Waiting     int           // callers behind the gate
	LastPause   time.Duration // the length of the current or last pause
	Pauses      uint64        // pauses set or extended, ever
	Escalations uint64        // pauses grown by Escalation, ever
}

// Holding reports whether the gate holds callers back: paused, and not yet
// letting its probe through.
func (s State) Holding() bool { return !s.Open && !s.Probing }

// State returns a snapshot of the gate.
func (p *Pause) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := gate(p.gate.Load())
	return State{Open: g == open, Probing: g == probePending || g == probing, Until: p.until, Reason: p.reason,
		Waiting: len(p.waiters), LastPause: p.last, Pauses: p.pauses, Escalations: p.escalated}
}
