package respoolotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/respool/respool/health"
	respoolotel "github.com/respool/respool/otel"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// attr returns the value of key among a span's attributes.
func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// traced instruments p, named orders, with an SDK TracerProvider whose
// spans rec records (and a MeterProvider), until the test ends; tracer
// starts the callers' spans.
func traced(t *testing.T, p *pool.Pool[int]) (rec *tracetest.SpanRecorder, tracer trace.Tracer) {
	t.Helper()
	rec = tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mp := sdkmetric.NewMeterProvider()
	stop, err := respoolotel.Instrument("orders", health.FromPool(p), respoolotel.Config{MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stop()
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	return rec, tp.Tracer("test")
}

// Under a caller's span, a take that creates makes respool.take and, under
// it, respool.create; a failed take and creation say why (error.type); a
// take without a caller's span makes none.
func TestSpansOfTakesAndCreations(t *testing.T) {
	refused := errors.New("connection refused")
	var fail atomic.Bool
	p, err := pool.New(pool.Factory[int]{Create: func(context.Context) (int, error) {
		if fail.Load() {
			return 0, refused
		}
		return 1, nil
	}}, pool.Config{Name: "orders", MaxObjects: 3, BackoffDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	rec, tracer := traced(t, p)

	ctx, request := tracer.Start(context.Background(), "request")
	h, err := p.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = h.GiveBack()
	idle, err := p.Take(context.Background()) // no caller's span: none
	if err != nil {
		t.Fatal(err)
	}
	held, _ := p.Take(context.Background()) // created, without a span
	_ = idle.GiveBack()
	held2, _ := p.Take(context.Background())
	fail.Store(true)
	if _, err := p.Take(ctx); !errors.Is(err, refused) {
		t.Fatalf("Take while creations fail = %v; want the refusal", err)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Take(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take with a cancelled context = %v", err)
	}
	_ = held.GiveBack()
	_ = held2.GiveBack()
	request.End()

	spans := rec.Ended()
	var got []string
	for _, s := range spans {
		got = append(got, s.Name())
	}
	want := []string{"respool.create", "respool.take", "respool.create", "respool.take", "respool.take", "request"}
	if len(got) != len(want) {
		t.Fatalf("spans %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("spans %q; want %q", got, want)
		}
	}
	reqID := spans[5].SpanContext().SpanID()
	create, take := spans[0], spans[1]
	if take.Parent().SpanID() != reqID || create.Parent().SpanID() != take.SpanContext().SpanID() {
		t.Errorf("respool.take's parent %v, respool.create's %v; want the request %v, then respool.take %v",
			take.Parent().SpanID(), create.Parent().SpanID(), reqID, take.SpanContext().SpanID())
	}
	for _, s := range []sdktrace.ReadOnlySpan{create, take} {
		if v, _ := attr(s, "db.client.connection.pool.name"); v.AsString() != "orders" || s.Status().Code == codes.Error {
			t.Errorf("%s: pool name %q, status %v; want orders, not an error", s.Name(), v.AsString(), s.Status())
		}
	}
	if v, ok := attr(take, "respool.take.waiting"); !ok || v.AsInt64() != 0 {
		t.Errorf("respool.take.waiting = %v, %v; want 0", v.AsInt64(), ok)
	}
	for i, w := range []struct{ span, errorType string }{
		{"respool.create", "other"},
		{"respool.take", "other"},
		{"respool.take", "canceled"},
	} {
		s := spans[2+i]
		if v, _ := attr(s, "error.type"); s.Name() != w.span || v.AsString() != w.errorType || s.Status().Code != codes.Error {
			t.Errorf("span %d: %s, error.type %q, status %v; want %s, %q, Error", 2+i, s.Name(), v.AsString(), s.Status(), w.span, w.errorType)
		}
	}
}

// A take failed by a creation the breaker refused says so: error.type
// rejected, respool.rejected_by breaker, the failures in a row and when
// the next attempt comes; the take after it fails fast and says that.
func TestSpansSayWhyATakeFailed(t *testing.T) {
	retryAt := time.Now().Add(time.Hour)
	open := &resilience.RejectedError{Mechanism: "breaker", Name: "orders", Reason: breaker.ErrOpen, RetryAt: retryAt}
	p, err := pool.New(pool.Factory[int]{Create: func(context.Context) (int, error) { return 0, open }},
		pool.Config{Name: "orders", MaxObjects: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	rec, tracer := traced(t, p)
	ctx, request := tracer.Start(context.Background(), "request")
	defer request.End()
	for range 2 {
		if _, err := p.Take(ctx); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("Take = %v; want the breaker's rejection", err)
		}
	}
	var takes []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "respool.take" {
			takes = append(takes, s)
		}
	}
	if len(takes) != 2 {
		t.Fatalf("%d respool.take spans; want 2", len(takes))
	}
	for i, w := range []struct{ errorType string }{{"rejected"}, {"failed_fast"}} {
		s := takes[i]
		et, _ := attr(s, "error.type")
		by, _ := attr(s, "respool.rejected_by")
		n, _ := attr(s, "respool.create.failures")
		at, _ := attr(s, "respool.retry_at")
		when, _ := time.Parse(time.RFC3339Nano, at.AsString()) // the pool's clock: within a microsecond
		if et.AsString() != w.errorType || by.AsString() != "breaker" || n.AsInt64() != 1 ||
			when.Sub(retryAt).Abs() > time.Microsecond {
			t.Errorf("take %d: error.type %q, rejected_by %q, failures %d, retry_at %q; want %q, breaker, 1, %s",
				i, et.AsString(), by.AsString(), n.AsInt64(), at.AsString(), w.errorType, retryAt.UTC().Format(time.RFC3339Nano))
		}
	}
}
