package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fullServer is a factory in front of a server that accepts limit objects
// at most and refuses the others with errServerFull, as PostgreSQL does
// with 53300 too_many_connections.
type fullServer struct {
	*fakeFactory
	mu      sync.Mutex
	limit   int64
	refused atomic.Int64
}

func (s *fullServer) Create(ctx context.Context) (*fakeObj, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live.Load() >= s.limit {
		s.attempts.Add(1)
		s.refused.Add(1)
		return nil, errServerFull
	}
	return s.fakeFactory.Create(ctx)
}

func (s *fullServer) setLimit(n int64) {
	s.mu.Lock()
	s.limit = n
	s.mu.Unlock()
}

// backPressureFor is a Config.BackPressure that holds off d on
// errServerFull.
func backPressureFor(d time.Duration) func(error) (time.Duration, bool) {
	return func(err error) (time.Duration, bool) { return d, errors.Is(err, errServerFull) }
}

// newFullServerHarness is a harness whose factory is a fullServer with
// limit.
func newFullServerHarness(t *testing.T, cfg Config, limit int64) (*harness, *fullServer) {
	var s *fullServer
	h := newHarnessOf(t, cfg, func(f *fakeFactory) Factory[*fakeObj] {
		s = &fullServer{fakeFactory: f, limit: limit}
		return factoryOf[*fakeObj](s)
	})
	return h, s
}

// A pool of 10 in front of a server that accepts 4: 64 callers are all
// served by the 4 objects the server accepted, the effective size drops to
// 4, and the server sees no attempt beyond the first burst until the hold
// ends.
func TestBackPressureShrinksThePoolToWhatTheServerAccepted(t *testing.T) {
	h, srv := newFullServerHarness(t, Config{MaxObjects: 10, AcquireTimeout: time.Hour, BackPressure: backPressureFor(time.Second)}, 4)
	results := make(chan takeResult, 64)
	release := make(chan struct{})
	for range 64 {
		go func() {
			hd, err := h.p.Take(context.Background())
			if err == nil {
				<-release
				err = hd.GiveBack()
			}
			results <- takeResult{hd, err}
		}()
	}
	waitUntil(t, "4 objects are out and 60 callers queue for them", func() bool {
		s := h.p.Stats()
		return s.InUse == 4 && s.Queued == 60 && s.Creating == 0
	})
	close(release)
	for range 64 {
		if r := h.result(results); r.err != nil {
			t.Fatalf("Take = %v; want every caller served by the objects the server accepted", r.err)
		}
	}
	s := h.p.Stats()
	if s.EffectiveMaxObjects != 4 || s.Creates != 4 || h.f.maxLive.Load() != 4 {
		t.Fatalf("effective max %d, %d creates, %d alive at most; want 4, 4, 4", s.EffectiveMaxObjects, s.Creates, h.f.maxLive.Load())
	}
	refused := srv.refused.Load()
	if refused > 6 || s.BackPressureEvents != uint64(refused) {
		t.Fatalf("%d refused attempts (want at most the 6 of the first burst), %d back-pressure events", refused, s.BackPressureEvents)
	}
	if !s.NextCreateAttempt.After(h.clk.Now()) && refused > 0 {
		t.Fatalf("creations not held back after back-pressure: next attempt %v", s.NextCreateAttempt)
	}
}

// Under sustained demand the pool grows back one probe per hold: each
// refused probe holds it at the objects alive, each success adds one.
func TestBackPressureGrowsBackOneProbeAtATime(t *testing.T) {
	h, srv := newFullServerHarness(t, Config{MaxObjects: 10, MaxQueueSize: 100, BackPressure: backPressureFor(time.Second)}, 4)
	var held []Handle[*fakeObj]
	for range 4 {
		held = append(held, h.take())
	}
	queued := make(chan takeResult, 10)
	for range 10 {
		go func() {
			hd, err := h.p.Take(context.Background())
			queued <- takeResult{hd, err}
		}()
	}
	waitUntil(t, "10 callers wait for give-backs", func() bool {
		s := h.p.Stats()
		return s.Queued == 10 && s.EffectiveMaxObjects == 4 && s.Creating == 0
	})
	burst := srv.refused.Load() // the creations asked for before the first refusal was known
	if burst < 1 || burst > 6 {
		t.Fatalf("%d refused attempts in the first burst, want 1 to 6", burst)
	}
	h.ev.wait(t, "created", 4+int(burst))
	for i := range 5 { // a full server: one refused probe a second
		h.clk.Advance(time.Second)
		h.ev.wait(t, "retry", 1)
		h.ev.wait(t, "created", 1)
		if n := srv.refused.Load(); n != burst+int64(i+1) {
			t.Fatalf("after %d s: %d refused attempts, want %d", i+1, n, burst+int64(i+1))
		}
		if s := h.p.Stats(); s.EffectiveMaxObjects != 4 || s.Creating != 0 {
			t.Fatalf("after %d s: effective max %d, %d creating; want 4, none", i+1, s.EffectiveMaxObjects, s.Creating)
		}
	}
	srv.setLimit(6) // room for two more
	h.clk.Advance(time.Second)
	for range 2 {
		r := h.result(queued)
		if r.err != nil {
			t.Fatal(r.err)
		}
		held = append(held, r.h)
	}
	h.ev.wait(t, "created", 3) // two successes, then a refused probe
	if s := h.p.Stats(); s.EffectiveMaxObjects != 6 || s.Creates != 6 || srv.refused.Load() != burst+6 {
		t.Fatalf("effective max %d, %d creates, %d refused; want 6, 6, %d", s.EffectiveMaxObjects, s.Creates, srv.refused.Load(), burst+6)
	}
	for range 8 {
		h.giveBack(held[0])
		r := h.result(queued)
		if r.err != nil {
			t.Fatal(r.err)
		}
		held = append(held[1:], r.h)
	}
	for _, hd := range held {
		h.giveBack(hd)
	}
}

// Callers beyond the effective size count against MaxQueueSize.
func TestBackPressureQueueLimitApplies(t *testing.T) {
	h, _ := newFullServerHarness(t, Config{MaxObjects: 10, MaxQueueSize: 2, BackPressure: backPressureFor(time.Second)}, 2)
	a, b := h.take(), h.take()
	w1 := h.takeAsync(context.Background()) // its creation is refused: it queues
	waitUntil(t, "it queues", func() bool { return h.p.Stats().Queued == 1 })
	w2 := h.takeAsync(context.Background())
	waitUntil(t, "a second queues", func() bool { return h.p.Stats().Queued == 2 })
	_, err := h.p.Take(context.Background())
	var qf *queueFullError
	if !errors.As(err, &qf) || qf.MaxObjects != 2 {
		t.Fatalf("Take = %v, want ErrQueueFull naming the effective size 2", err)
	}
	h.giveBack(a)
	h.giveBack(b)
	h.giveBack(h.result(w1).h)
	h.giveBack(h.result(w2).h)
}

// Back-pressure with nothing alive holds creations for its delay like a
// failure; the first success then sets the effective size to what is
// alive, from which it grows.
func TestBackPressureWithNothingAlive(t *testing.T) {
	h, srv := newFullServerHarness(t, Config{MaxObjects: 10, BackPressure: backPressureFor(2 * time.Second)}, 0)
	_, err := h.p.Take(h.withDeadline(time.Second)) // cannot wait 2s for the next attempt
	var ce *CreateError
	if !errors.As(err, &ce) || !errors.Is(err, errServerFull) {
		t.Fatalf("Take = %v, want the refusal", err)
	}
	if next := h.p.Stats().NextCreateAttempt.Sub(h.clk.Now()); next < 2*time.Second {
		t.Fatalf("next attempt in %v, want at least the 2s asked for", next)
	}
	srv.setLimit(1)
	if _, err := h.p.Take(h.withDeadline(time.Hour)); !errors.As(err, &ce) || !ce.FailedFast {
		t.Fatalf("Take before the next attempt = %v, want the refusal, failed fast (nothing alive to wait for)", err)
	}
	h.clk.Advance(2 * time.Second)
	h.ev.wait(t, "retry", 1)
	r := h.result(h.takeAsync(h.withDeadline(time.Hour)))
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The caller may have its object before the actor has published the
	// effective size (after handling the creation).
	h.ev.wait(t, "created", 1)
	if s := h.p.Stats(); s.EffectiveMaxObjects != 1 {
		t.Fatalf("effective max %d, want 1: it grows back from what is alive", s.EffectiveMaxObjects)
	}
	h.giveBack(r.h)
}

// Without a BackPressure function, a refusal is a failure like any other.
func TestBackPressureOff(t *testing.T) {
	h, _ := newFullServerHarness(t, Config{MaxObjects: 10}, 1)
	a := h.take()
	if _, err := h.p.Take(context.Background()); !errors.Is(err, errServerFull) {
		t.Fatalf("Take = %v, want the refusal", err)
	}
	if s := h.p.Stats(); s.EffectiveMaxObjects != 10 || s.BackPressureEvents != 0 || s.CreateFailuresInARow != 1 || !errors.Is(s.LastCreateError, errServerFull) {
		t.Fatalf("effective max %d, %d back-pressure events, %d failures in a row (%v); want 10, 0, 1 refusal",
			s.EffectiveMaxObjects, s.BackPressureEvents, s.CreateFailuresInARow, s.LastCreateError)
	}
	h.giveBack(a)
}
