package pool

import (
	"context"
	"sync"
	"testing"
	"time"
)

// observed records what an Observer is told.
type observed struct {
	mu                   sync.Mutex
	waits, creates, uses []time.Duration
}

func (o *observed) observer() *Observer {
	add := func(to *[]time.Duration) func(time.Duration) {
		return func(d time.Duration) {
			o.mu.Lock()
			*to = append(*to, d)
			o.mu.Unlock()
		}
	}
	return &Observer{Wait: add(&o.waits), Create: add(&o.creates), Use: add(&o.uses)}
}

func (o *observed) get() (waits, creates, uses []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.waits...), append([]time.Duration(nil), o.creates...), append([]time.Duration(nil), o.uses...)
}

// The Observer is told each Take's wait (a creation's run included, or
// nothing for an idle object), each creation's run and each hold, on the
// pool's clock; after Observe(nil), nothing.
func TestObserverIsToldWaitsCreationsAndHolds(t *testing.T) {
	for _, threshold := range []time.Duration{0, time.Hour} { // takenAt stored by Take, or by lend for HoldThreshold
		h := newHarness(t, Config{MaxObjects: 2, HoldThreshold: threshold})
		o := &observed{}
		h.p.Observe(o.observer())
		h.f.set(func(f *fakeFactory) { f.createSeen = func(context.Context) { h.clk.moveLate(30 * time.Millisecond) } })
		first := h.take() // created: 30 ms
		h.clk.moveLate(5 * time.Millisecond)
		h.giveBack(first) // held 5 ms
		again := h.take() // idle: at once
		h.clk.moveLate(7 * time.Millisecond)
		if err := again.Discard(); err != nil { // held 7 ms
			t.Fatal(err)
		}
		waitUntil(t, "the creation is told", func() bool { _, c, _ := o.get(); return len(c) == 1 })
		waits, creates, uses := o.get()
		want := func(what string, got []time.Duration, w ...time.Duration) {
			t.Helper()
			if len(got) != len(w) {
				t.Fatalf("HoldThreshold %v: %s %v; want %v", threshold, what, got, w)
			}
			for i := range w {
				if got[i] != w[i] {
					t.Errorf("HoldThreshold %v: %s %v; want %v", threshold, what, got, w)
				}
			}
		}
		want("waits", waits, 30*time.Millisecond, 0)
		want("creations", creates, 30*time.Millisecond)
		want("holds", uses, 5*time.Millisecond, 7*time.Millisecond)

		h.p.Observe(nil)
		h.giveBack(h.take())
		if w, c, u := o.get(); len(w) != 2 || len(c) != 1 || len(u) != 2 {
			t.Errorf("after Observe(nil): %v %v %v; want nothing more told", w, c, u)
		}
	}
}
