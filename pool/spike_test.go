package pool

import (
	"context"
	"testing"
	"time"
)

// spikeHarness is a pool of at most 10 objects whose MinIdle objects have
// been made, every one of them taken (held), with creations gated from
// then on: each Create waits for a value on the returned channel.
func spikeHarness(t *testing.T, minIdle int) (*harness, []Handle[*fakeObj], chan struct{}) {
	t.Helper()
	h := newHarness(t, Config{MaxObjects: 10, MinIdle: minIdle})
	h.ev.wait(t, "created", minIdle)
	var held []Handle[*fakeObj]
	for range minIdle {
		held = append(held, h.take())
	}
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate = gate })
	t.Cleanup(func() { // before the pool's Close
		close(gate)
		for _, hd := range held {
			_ = hd.GiveBack() // ErrAlreadyReturned for those the test gave back
		}
	})
	return h, held, gate
}

// takeMany starts n Takes, each bounded by 5 s; their results arrive on the
// returned channel.
func (h *harness) takeMany(n int) chan takeResult {
	ch := make(chan takeResult, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			hd, err := h.p.Take(ctx)
			ch <- takeResult{hd, err}
		}()
	}
	return ch
}

// serveEach waits for n results of res (each within h.result's bound),
// fails on an error, and gives each object back as it comes.
func (h *harness) serveEach(res chan takeResult, n int) {
	h.t.Helper()
	for range n {
		r := h.result(res)
		if r.err != nil {
			h.t.Fatalf("Take: %v", r.err)
		}
		h.giveBack(r.h)
	}
}

// TestSpikeServedByGiveBacks: callers who find no idle object while objects
// are held, which may come back before a new one is made, get one creation
// between them, not one each (HikariCP-benchmark's SpikeLoadTest: min idle
// 5, 50 requests at once, connections that take 150 ms to open and queries
// of 2 ms); the objects given back serve them, and the creation, once it
// ends, leaves one object more, idle. Before, every caller started its own
// creation: 5 in flight here, 45 in the spike, every one of them an idle
// object once made.
func TestSpikeServedByGiveBacks(t *testing.T) {
	h, held, gate := spikeHarness(t, 2)
	res := h.takeMany(5)
	h.ev.wait(t, "take", 5)
	if got := h.p.Stats().Creating; got != 1 {
		t.Fatalf("5 callers wait while 2 objects are held: %d creations in flight; want 1", got)
	}
	for _, hd := range held {
		h.giveBack(hd)
	}
	h.serveEach(res, 5) // the 2 objects go round the 5 callers
	if got := h.p.Stats().Creating; got != 1 {
		t.Fatalf("every caller served: %d creations in flight; want the 1 started", got)
	}
	gate <- struct{}{} // the creation ends
	h.ev.wait(t, "created", 1)
	if s := h.p.Stats(); s.Total != 3 || s.Idle != 3 || h.f.attempts.Load() != 3 {
		t.Fatalf("after the creation: %d objects, %d idle, %d creations in all; want 3, 3, 3 (stats %+v)",
			s.Total, s.Idle, h.f.attempts.Load(), s)
	}
}

// TestCreationsRampUpWhileCallersWait: while callers still wait when a
// creation ends (no give-back served them meanwhile), each such creation
// lets one more run at once, so that a lasting demand is met within a few
// creation times: 1, then 2, then 4 in flight. Once the last caller waiting
// is served, the next spike starts from one again.
func TestCreationsRampUpWhileCallersWait(t *testing.T) {
	h, _, gate := spikeHarness(t, 1)
	res := h.takeMany(7)
	h.ev.wait(t, "take", 7)
	for _, want := range []int{1, 2, 4} {
		if got := h.p.Stats().Creating; got != want {
			t.Fatalf("%d creations in flight; want %d (stats %+v)", got, want, h.p.Stats())
		}
		for range want { // each ends for a caller still waiting
			gate <- struct{}{}
			h.ev.wait(t, "created", 1)
		}
	}
	var served []Handle[*fakeObj] // held, as the first one is
	for range 7 {
		r := h.result(res)
		if r.err != nil {
			t.Fatalf("Take: %v", r.err)
		}
		served = append(served, r.h)
	}
	res = h.takeMany(2)
	h.ev.wait(t, "take", 2)
	if got := h.p.Stats().Creating; got != 1 {
		t.Fatalf("a new spike while 8 objects are held: %d creations in flight; want 1", got)
	}
	for _, hd := range served {
		h.giveBack(hd)
	}
	for range 2 {
		if r := h.result(res); r.err != nil {
			t.Fatalf("Take: %v", r.err)
		} else {
			h.giveBack(r.h)
		}
	}
}

// TestSlowDrainIsNotPaced: when the callers waiting would wait longer for
// objects given back than for a new one (5 callers × a 1 s mean hold over
// 2 objects, against creations measured at next to nothing), each gets its
// creation at once: pacing would only hold back what serves them (a
// warm-up under load, where a creation takes a second and writers with
// 1 s deadlines queue behind one connection).
func TestSlowDrainIsNotPaced(t *testing.T) {
	h, _, gate := spikeHarness(t, 2)
	h.p.overload.hold.Store(int64(time.Second))
	h.p.overload.samples.Store(holdWeight)
	res := h.takeMany(5)
	h.ev.wait(t, "take", 5)
	waitUntil(t, "a creation for every caller", func() bool { return h.p.Stats().Creating == 5 })
	for range 5 {
		gate <- struct{}{}
	}
	h.serveEach(res, 5)
}
