package pause_test

import (
	"math"
	"testing"
	"time"

	"github.com/respool/respool/resilience/pause"
)

// TestProbeSignalAfterRepauseDoesNotEscalateTwice: while the probe runs,
// a call admitted before the pause meets the signal and pauses the gate
// again, escalated once; the probe then meets the same signal. That is one
// signal after reopening, not two: the pause grows once.
func TestProbeSignalAfterRepauseDoesNotEscalateTwice(t *testing.T) {
	f := newFixture(t, pause.Config{})
	inFlight, err := f.p.Enter(f.ctx) // admitted while the gate is open
	if err != nil {
		t.Fatal(err)
	}
	f.p.Hold(time.Second, slowDown{time.Second})
	waiter := f.enterAsync(f.ctx)
	f.clk.Advance(time.Second)
	probe := <-waiter
	if probe.pm.Token != 1 {
		t.Fatalf("waiter: %+v; want the probe", probe)
	}
	f.p.Exit(inFlight, slowDown{time.Second}) // right after reopening: 1s × 2
	f.p.Exit(probe.pm, slowDown{time.Second}) // the same signal, seen by the probe
	if s := f.state(); s.LastPause != 2*time.Second || s.Escalations != 1 {
		t.Fatalf("pause %v after %d escalations; want 2s after 1", s.LastPause, s.Escalations)
	}
}

// TestStaleProbeDoesNotOpen: a probe whose pause was superseded (the gate
// paused again while it ran, and a new probe went after the new pause)
// says nothing about the new pause: its success must not open the gate
// under the new probe.
func TestStaleProbeDoesNotOpen(t *testing.T) {
	f := newFixture(t, pause.Config{Escalation: 1})
	f.p.Hold(time.Second, slowDown{time.Second})
	first := f.enterAsync(f.ctx)
	second := f.enterAsync(f.ctx)
	third := f.enterAsync(f.ctx)
	f.clk.Advance(time.Second)
	stale := <-first
	f.p.Hold(time.Second, slowDown{time.Second}) // another signal: paused again
	f.clk.Advance(time.Second)
	probe := <-second
	if stale.pm.Token != 1 || probe.pm.Token != 1 {
		t.Fatalf("first %+v, second %+v; want two probes", stale, probe)
	}
	f.p.Exit(stale.pm, nil)
	if s := f.state(); s.Open || !s.Probing {
		t.Fatalf("state %+v after the stale probe; want the second probe still running", s)
	}
	select {
	case e := <-third:
		t.Fatalf("third passed on the stale probe's success: %+v", e)
	default:
	}
	f.p.Exit(probe.pm, nil)
	if e := <-third; e.err != nil {
		t.Fatal(e.err)
	}
	if !f.state().Open {
		t.Fatal("not open after the current probe succeeded")
	}
}

// TestEscalationSaturates: escalating a pause past the largest duration
// (MaxPause set to "no cap") gives the largest pause, not a wrapped one.
func TestEscalationSaturates(t *testing.T) {
	f := newFixture(t, pause.Config{MaxPause: math.MaxInt64})
	huge := time.Duration(1 << 62)
	f.p.Hold(huge, slowDown{huge})
	f.clk.Advance(huge)
	f.call(nil) // the probe succeeds: open
	f.call(slowDown{time.Second})
	if got := f.state().LastPause; got < huge {
		t.Fatalf("pause %v after escalating %v; want at least that", got, huge)
	}
}
