package pool

import (
	"context"
	"testing"
	"time"
)

// BenchmarkTakeGiveBack measures one goroutine taking and giving back an
// object from a warm pool, with the options that add work to that path:
// what each costs beside the bare path (leak tracking off); a shared
// Budget should add nothing (it is asked by creations only). bench/ compares
// the pool with others; this isolates its own options.
func BenchmarkTakeGiveBack(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"bare", Config{LeakTrackingDisabled: true}},
		{"leak", Config{}},
		{"lifetime", Config{LeakTrackingDisabled: true, MaxLifetime: time.Hour}},
		{"hold-threshold", Config{LeakTrackingDisabled: true, HoldThreshold: time.Hour}},
		{"shared-budget", Config{LeakTrackingDisabled: true, Budget: &fakeBudget{max: 8}}}, // asked only by creations
	} {
		b.Run(c.name, func(b *testing.B) {
			c.cfg.MaxObjects = 8
			p, err := New[int](Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}, c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h, err := p.Take(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := h.GiveBack(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKeyedTakeGiveBack is BenchmarkTakeGiveBack's bare and leak
// cases through a Keyed of two keys: what the key's lookup and the budget's
// checks add.
func BenchmarkKeyedTakeGiveBack(b *testing.B) {
	for _, c := range []struct {
		name     string
		disabled bool
	}{
		{"bare", true},
		{"leak", false},
	} {
		b.Run(c.name, func(b *testing.B) {
			k, err := NewKeyed(KeyedConfig[string, int]{MaxObjects: 8, LeakTrackingDisabled: c.disabled})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close(context.Background())
			f := Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}
			for _, key := range []string{"primary", "replica"} {
				if _, err := k.Add(key, f, Config{}); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h, err := k.Take(ctx, "replica")
				if err != nil {
					b.Fatal(err)
				}
				if err := h.GiveBack(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
