package dbguard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

// countingStore is a ratelimit.Store that grants the first permits Takes
// of any key and refuses the others for an hour; taken is told of each
// Take after the first permits.
type countingStore struct {
	mu      sync.Mutex
	permits int
	takes   int
	keys    map[string]bool
	lim     ratelimit.Limit
	refused chan struct{}
}

func (s *countingStore) Take(_ context.Context, key string, _ int64, lim ratelimit.Limit, _ time.Time, _ time.Duration) (ratelimit.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takes++
	s.keys[key], s.lim = true, lim
	if s.takes <= s.permits {
		return ratelimit.Decision{OK: true}, nil
	}
	select {
	case s.refused <- struct{}{}:
	default:
	}
	return ratelimit.Decision{RetryAfter: time.Hour}, nil
}

func (s *countingStore) Drain(context.Context, string, ratelimit.Limit, time.Time) error { return nil }
func (s *countingStore) CancelSlot(context.Context, string, int64, ratelimit.Limit, time.Time, time.Duration) error {
	return nil
}

// Two Guards given one ConnectRateStore take their connect-rate permits
// from it, under the key "" and the limit ConnectRate a second: when the
// store has none left, an attempt of either waits for one (here, until
// its context ends) instead of dialing; a Guard without the store counts
// alone.
func TestConnectRateStoreIsShared(t *testing.T) {
	store := &countingStore{permits: 3, keys: map[string]bool{}, refused: make(chan struct{}, 1)}
	a := newFixture(t, dbguard.Config{ConnectRate: 5, ConnectRateStore: store})
	b := newFixture(t, dbguard.Config{ConnectRate: 5, ConnectRateStore: store})
	ctx := context.Background()
	for _, f := range []*fixture{a, b, a} {
		if _, err := f.connect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() { <-store.refused; cancel() }()
	if _, err := b.connect(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("fourth attempt of the two Guards, the store having granted 3: %v; want it held until its context ended", err)
	}
	if a.attempts()+b.attempts() != 3 {
		t.Fatalf("%d+%d attempts reached the factories; want 3 (the store's permits)", a.attempts(), b.attempts())
	}
	want := ratelimit.Limit{Permits: 5, Period: time.Second, Burst: 5}
	if !store.keys[""] || len(store.keys) != 1 || store.lim != want {
		t.Fatalf("the store was asked for keys %v under %+v; want the key \"\" under %+v", store.keys, store.lim, want)
	}
	alone := newFixture(t, dbguard.Config{ConnectRate: 5})
	for range 5 {
		if _, err := alone.connect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Join is called once, by New, with the Guard it made; the Listener it
// returns is told every event after Config.Listener (a pause here); and
// leave is called by the first Close only.
func TestJoinTellsEventsAndLeavesOnClose(t *testing.T) {
	var joined *dbguard.Guard
	var joins, leaves int
	var told []resilience.Event
	f := newFixture(t, dbguard.Config{Join: func(g *dbguard.Guard) (resilience.Listener, func()) {
		joins++
		joined = g
		return func(e resilience.Event) { told = append(told, e) }, func() { leaves++ }
	}})
	if joins != 1 || joined != f.g {
		t.Fatalf("Join called %d times with %p; want once with the Guard %p", joins, joined, f.g)
	}
	f.g.Pause().Hold(time.Second, errFull)
	if len(told) != 1 || told[0].Kind != resilience.EventPaused || len(f.events) != 1 {
		t.Fatalf("told %v (the Listener got %v); want the pause, told both", told, f.events)
	}
	f.g.Close()
	f.g.Close()
	if leaves != 1 {
		t.Fatalf("leave called %d times by two Closes; want once", leaves)
	}
}
