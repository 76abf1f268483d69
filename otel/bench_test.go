package respoolotel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/respool/respool/health"
	respoolotel "github.com/respool/respool/otel"
	"github.com/respool/respool/pool"
)

// newIntPool returns a pool of ints, instrumented with an SDK MeterProvider
// when on.
func newIntPool(tb testing.TB, on bool) *pool.Pool[int] {
	p, err := pool.New(pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }},
		pool.Config{Name: "bench", MaxObjects: 4})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close(context.Background()) })
	if on {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		tb.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		stop, err := respoolotel.Instrument("bench", health.FromPool(p), respoolotel.Config{MeterProvider: mp})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = stop() })
	}
	return p
}

// Recording a take's wait and a hold allocates nothing (the pool's own
// leak token is the one allocation of both): the attribute set and the
// record options are made once.
func TestRecordingAllocatesNothing(t *testing.T) {
	p := newIntPool(t, true)
	ctx := context.Background()
	takeGiveBack := func() {
		h, err := p.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = h.GiveBack()
	}
	takeGiveBack() // the first creates
	on := testing.AllocsPerRun(1000, takeGiveBack)
	p = newIntPool(t, false)
	takeGiveBack()
	if off := testing.AllocsPerRun(1000, takeGiveBack); on != off {
		t.Errorf("Take and GiveBack: %v allocations instrumented, %v not; want the same", on, off)
	}
}

// BenchmarkTakeGiveBack: a Take and a GiveBack of an idle object, with the
// pool's metrics recorded by the OpenTelemetry SDK (on) or not (off).
func BenchmarkTakeGiveBack(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) {
			p := newIntPool(b, on)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					h, err := p.Take(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					_ = h.GiveBack()
				}
			})
		})
	}
}
