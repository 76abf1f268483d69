package pool

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/resilience"
)

func TestStatsDestroysByReason(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 2})
	a, b := h.take(), h.take()
	if err := a.Discard(); err != nil {
		t.Fatal(err)
	}
	b.Value().broken.Store(true)
	h.giveBack(b)
	h.ev.wait(t, "destroyed", 2)
	d := h.p.Stats().Destroys
	if d.Discarded != 1 || d.Invalid != 1 || totalDestroyed(d) != 2 {
		t.Fatalf("destroys = %+v, want 1 discarded and 1 invalid", d)
	}
	if got := destroysOf(d, reasonDiscarded); got != 1 {
		t.Fatalf("destroysOf(discarded) = %d, want 1", got)
	}
}

// destroysOf is d's count of reason r.
func destroysOf(d DestroyCounts, r destroyReason) uint64 {
	return reflect.ValueOf(d).Field(int(r)).Uint()
}

func TestQuantileSaysWhenItHasNoBound(t *testing.T) {
	if d, ok := (Histogram{}).Quantile(0.5); ok || d != 0 {
		t.Fatalf("empty histogram: Quantile = %v, %v; want 0, false", d, ok)
	}
	h := Histogram{Bounds: []time.Duration{time.Millisecond, 0}, Counts: []uint64{1, 1}}
	if d, ok := h.Quantile(0.25); !ok || d != time.Millisecond {
		t.Fatalf("Quantile(0.25) = %v, %v; want 1ms, true", d, ok)
	}
	if d, ok := h.Quantile(0.99); ok || d != time.Millisecond {
		t.Fatalf("Quantile(0.99) = %v, %v; want at least 1ms (the last bucket's lower bound), false", d, ok)
	}
}

func TestNewRefusesAFactoryWithoutCreate(t *testing.T) {
	_, err := New[int](Factory[int]{Destroy: func(int) error { return nil }}, Config{})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Factory.Create" || !strings.Contains(err.Error(), "Factory.Create") {
		t.Fatalf("New(Factory without Create) = %v, want a ConfigError naming Factory.Create", err)
	}
	p, err := New[int](Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestCountSaysOneInTheSingular(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 callers"}, {1, "1 caller"}, {2, "2 callers"}} {
		if got := count(c.n, "caller"); got != c.want {
			t.Errorf("count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// An empty pool of the largest size allocates what it needs up front (its
// wait queue, a pointer per object), not a stack of MaxObjects per shard.
func TestNewAllocatesLittleForALargeEmptyPool(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, err := New[int](Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }},
		Config{MaxObjects: maxObjectsLimit})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	const limit = 1 << 20 // the queue's 512 KiB and small change
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Fatalf("New allocated %d KiB for an empty pool of %d, want at most %d KiB", got>>10, maxObjectsLimit, limit>>10)
	}
}

// Stats reads counters: it does not wait for the actor, even a busy one.
func TestStatsDoesNotNeedTheActor(t *testing.T) {
	busy := make(chan struct{})
	release := make(chan struct{})
	hook := func(ev string) {
		if ev == "created" {
			close(busy)
			<-release // the actor is stuck in this event
		}
	}
	f := &fakeFactory{}
	p, err := newPool[*fakeObj](factoryOf[*fakeObj](f), Config{MaxObjects: 2, Clock: newFakeClock()}, hook)
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	<-busy
	got := make(chan Stats, 1)
	go func() { got <- p.Stats() }()
	select {
	case s := <-got:
		if s.Takes != 1 || s.Creates != 1 || s.Total != 1 {
			t.Errorf("stats = %+v, want 1 take, 1 create", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("Stats waited for the actor")
	}
	close(release)
	if err := h.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// totalDestroyed is the number of objects d counts, whatever the reason.
func totalDestroyed(d DestroyCounts) uint64 {
	var n uint64
	v := reflect.ValueOf(d)
	for i := range v.NumField() {
		n += v.Field(i).Uint()
	}
	return n
}

// Each reason's counter is read into the DestroyCounts field whose JSON
// name is the reason's name (the log lines' reason, Event.Reason, health's
// JSON and the Prometheus label).
func TestDestroyCountsFieldsAreTheReasons(t *testing.T) {
	var n [numDestroyReasons]atomic.Uint64
	for r := range n {
		n[r].Store(uint64(r) + 1)
	}
	v := reflect.ValueOf(destroyCounts(&n))
	if v.NumField() != int(numDestroyReasons) {
		t.Fatalf("DestroyCounts has %d fields for %d reasons", v.NumField(), numDestroyReasons)
	}
	var sum DestroyCounts
	sum.add(destroyCounts(&n))
	sum.add(destroyCounts(&n))
	for r := range numDestroyReasons {
		f := v.Type().Field(int(r))
		if name := f.Tag.Get("json"); name != r.String() || v.Field(int(r)).Uint() != uint64(r)+1 {
			t.Errorf("field %d, %s (json %q) = %d; want reason %q's count %d", r, f.Name, name, v.Field(int(r)).Uint(), r, r+1)
		}
		if got := reflect.ValueOf(sum).Field(int(r)).Uint(); got != 2*(uint64(r)+1) {
			t.Errorf("add: %s = %d; want %d", f.Name, got, 2*(r+1))
		}
	}
}
