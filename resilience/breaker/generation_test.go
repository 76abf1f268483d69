package breaker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
)

var errStale = errors.New("down before the transition")

// TestStaleFailureMissesTheFreshWindow forces the interleaving in which a
// call admitted before Reset or TransitionTo ends while the transition is
// half done: the new window is stored, the new word is not yet. The Exit
// still finds its generation's word, but must not record its failure in
// the window of the next generation (where it would count against a
// service that the reset has just declared healthy).
func TestStaleFailureMissesTheFreshWindow(t *testing.T) {
	transitions := map[string]func(*Breaker){
		"Reset":                     (*Breaker).Reset,
		"TransitionTo(Closed)":      func(b *Breaker) { _ = b.TransitionTo(Closed) },
		"TransitionTo(MetricsOnly)": func(b *Breaker) { _ = b.TransitionTo(MetricsOnly) },
	}
	for name, transition := range transitions {
		t.Run(name, func(t *testing.T) {
			// Two failures of two calls open it: the stale failure and one
			// more would.
			b, err := New(Config{Clock: clocktest.New(time.Time{}), WindowSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			p, err := b.Enter(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			b.midPublish = func() { b.Exit(p, errStale) }
			transition(b)
			b.midPublish = nil
			if s := b.Stats(); s.Calls != 0 || s.Failures != 0 {
				t.Fatalf("fresh window holds %d failures of %d calls; want nothing from before the transition", s.Failures, s.Calls)
			}
			p, err = b.Enter(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			b.Exit(p, errStale)
			if s := b.Stats(); s.State == Open || s.Calls != 1 {
				t.Fatalf("after one failure of the new generation: %+v; want 1 call recorded, not open", s)
			}
		})
	}
}

// TestStressStaleFailuresAcrossResets lets the interleaving happen by
// itself: callers admitted before a Reset end with failures while Reset
// runs. No call is admitted after it, so the fresh window must stay empty
// whatever the interleaving. Bounded: 300 rounds of 8 callers.
func TestStressStaleFailuresAcrossResets(t *testing.T) {
	b, err := New(Config{Clock: clocktest.New(time.Time{}), WindowSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	const callers = 8
	for round := range 300 {
		var admitted, done sync.WaitGroup
		start := make(chan struct{})
		admitted.Add(callers)
		done.Add(callers)
		for range callers {
			go func() {
				defer done.Done()
				p, err := b.Enter(context.Background())
				admitted.Done()
				if err != nil {
					t.Error(err)
					return
				}
				<-start
				b.Exit(p, errStale)
			}()
		}
		admitted.Wait()
		close(start)
		b.Reset()
		done.Wait()
		if s := b.Stats(); s.Calls != 0 {
			t.Fatalf("round %d: the window after Reset holds %d failures of %d calls admitted before it", round, s.Failures, s.Calls)
		}
		b.Reset() // the failures that ended before the Reset are in the old window: start clean
	}
}
