package faults

import (
	"fmt"
	"time"
)

// fullDeadline is the latency from which a call counts as having waited its
// full deadline (timers fire a little early or late).
const fullDeadline = callDeadline * 95 / 100

type frozenOutcome struct {
	model             callerModel
	calls, waitedFull int // calls started while frozen, at least callDeadline before the thaw
}

// runFrozen stops the server with SIGSTOP under a warm pool for
// faultWindow.
func runFrozen(r *run) outcome {
	t, s := r.t, r.set.main
	r.ping(s)
	_, _, l := r.warmLoad(s, "SELECT 1")
	if err := s.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	t.Cleanup(func() { // if the test ends early, for the next scenarios
		if !thawed {
			_ = s.Thaw()
		}
	})
	frozen := time.Now()
	r.window(faultWindow)
	if err := s.Thaw(); err != nil {
		t.Fatalf("the server did not come back: %v", err)
	}
	thawed = true
	thawedAt := time.Now()
	recoverErr := l.waitAllOK(r.ctx, thawedAt, recoverBound)
	r.finish(l)

	o := &frozenOutcome{model: r.model}
	for _, c := range l.started(l.at(frozen), l.at(thawedAt)-callDeadline) {
		o.calls++
		if c.latency() >= fullDeadline {
			o.waitedFull++
		}
	}
	if o.calls == 0 {
		t.Errorf("%s made no call while the server was frozen", r.c.name)
	}
	if recoverErr != nil {
		t.Errorf("%s after the thaw: %v", r.c.name, recoverErr)
	}
	return o
}

func (o *frozenOutcome) share() float64 { return float64(o.waitedFull) / float64(max(o.calls, 1)) }

func (o *frozenOutcome) cells() []cell {
	return []cell{{fmt.Sprintf("frozen %v%s: calls that wait their full deadline", faultWindow, o.model.label()),
		fmt.Sprintf("%s (%d of %d)", percent(o.waitedFull, o.calls), o.waitedFull, o.calls)}}
}
