package prometheus_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/health"
	respoolprom "github.com/respool/respool/metrics/prometheus"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape serves reg over HTTP, as a Prometheus server would read it, and
// parses what it reads.
func scrape(t *testing.T, reg *prom.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// value returns the value of the metric of family name whose labels
// include want, and its type.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, dto.MetricType) {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), mf.GetType()
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), mf.GetType()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), mf.GetType()
		}
	}
	t.Fatalf("no %s with labels %v", name, want)
	return 0, 0
}

func TestScrapeNamesTypesAndValues(t *testing.T) {
	var down atomic.Bool
	p, err := pool.New[int](pool.Factory[int]{Create: func(context.Context) (int, error) {
		if down.Load() {
			return 0, errors.New("refused")
		}
		return 1, nil
	}}, pool.Config{MaxObjects: 2, MaxQueueSize: 1, LeakTrackingDisabled: true, BackoffDisabled: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())

	// Two objects in use, one discarded, a caller queued, one refused.
	h1, _ := p.Take(context.Background())
	h2, _ := p.Take(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { _, err := p.Take(ctx); waited <- err }()
	waitUntil(t, "the waiter queued", func() bool { return p.Stats().Queued == 1 })
	if _, err := p.Take(context.Background()); !errors.Is(err, pool.ErrQueueFull) {
		t.Fatalf("Take: %v, want ErrQueueFull", err)
	}

	clock := clocktest.New(time.Time{})
	b, _ := breaker.New(breaker.Config{Clock: clock})
	_ = b.TransitionTo(breaker.Open)
	pa, _ := pause.New(pause.Config{Clock: clock})
	defer pa.Stop()
	pa.Hold(time.Minute, errors.New("slow down"))

	checker, _ := health.New(health.Config{})
	src := health.FromPool(p)
	src.Breaker, src.Pause = b, pa
	if err := checker.Add("orders", src); err != nil {
		t.Fatal(err)
	}
	reg := prom.NewRegistry()
	reg.MustRegister(respoolprom.NewCollector(checker))

	mfs := scrape(t, reg)
	pl := map[string]string{"pool": "orders"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		typ    dto.MetricType
		want   float64
	}{
		{"respool_objects", pl, dto.MetricType_GAUGE, 2},
		{"respool_in_use_objects", pl, dto.MetricType_GAUGE, 2},
		{"respool_idle_objects", pl, dto.MetricType_GAUGE, 0},
		{"respool_waiting_callers", pl, dto.MetricType_GAUGE, 1},
		{"respool_max_objects", pl, dto.MetricType_GAUGE, 2},
		{"respool_effective_max_objects", pl, dto.MetricType_GAUGE, 2},
		{"respool_takes_total", pl, dto.MetricType_COUNTER, 2},
		{"respool_queue_full_total", pl, dto.MetricType_COUNTER, 1},
		{"respool_creates_total", pl, dto.MetricType_COUNTER, 2},
		{"respool_create_failures_total", pl, dto.MetricType_COUNTER, 0},
		{"respool_destroys_total", map[string]string{"pool": "orders", "reason": "discarded"}, dto.MetricType_COUNTER, 0},
		{"respool_acquire_wait_seconds", pl, dto.MetricType_HISTOGRAM, 2},
		{"respool_breaker_state", map[string]string{"pool": "orders", "state": "open"}, dto.MetricType_GAUGE, 1},
		{"respool_breaker_state", map[string]string{"pool": "orders", "state": "closed"}, dto.MetricType_GAUGE, 0},
		{"respool_breaker_transitions_total", pl, dto.MetricType_COUNTER, 1},
		{"respool_pause_holding", pl, dto.MetricType_GAUGE, 1},
		{"respool_pauses_total", pl, dto.MetricType_COUNTER, 1},
	} {
		got, typ := value(t, mfs, tc.name, tc.labels)
		if typ != tc.typ || got != tc.want {
			t.Errorf("%s%v = %v (%v), want %v (%v)", tc.name, tc.labels, got, typ, tc.want, tc.typ)
		}
	}
	if _, ok := mfs["respool_limiter_rejected_total"]; ok {
		t.Error("limiter metrics exported for a source without a limiter")
	}

	// The waiter gives up, an object is discarded, a creation fails.
	cancel()
	<-waited
	_ = h1.Discard()
	down.Store(true)
	if _, err := p.Take(context.Background()); err == nil {
		t.Fatal("Take with creations failing succeeded")
	}
	_ = h2.GiveBack()
	mfs = scrape(t, reg)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"respool_cancelled_waits_total", pl, 1},
		{"respool_destroys_total", map[string]string{"pool": "orders", "reason": "discarded"}, 1},
		{"respool_create_failures_total", pl, 1},
		{"respool_idle_objects", pl, 1},
		{"respool_in_use_objects", pl, 0},
	} {
		if got, _ := value(t, mfs, tc.name, tc.labels); got != tc.want {
			t.Errorf("after: %s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	hist := mfs["respool_acquire_wait_seconds"].GetMetric()[0].GetHistogram()
	buckets := hist.GetBucket()
	last := buckets[len(buckets)-1]
	if len(buckets) != 28 || buckets[0].GetUpperBound() != 1e-6 || !math.IsInf(last.GetUpperBound(), 1) ||
		last.GetCumulativeCount() != hist.GetSampleCount() || hist.GetSampleCount() != 2 {
		t.Errorf("acquire-wait: %d buckets, first %v, last %v, count %d; want 27 bounds from 1µs and +Inf, 2 takes",
			len(buckets), buckets[0], last, hist.GetSampleCount())
	}
	for i := 1; i < len(buckets)-1; i++ {
		if buckets[i].GetCumulativeCount() < buckets[i-1].GetCumulativeCount() || buckets[i].GetUpperBound() != 2*buckets[i-1].GetUpperBound() {
			t.Fatalf("bucket %d: %v after %v: not cumulative doubling bounds", i, buckets[i], buckets[i-1])
		}
	}
}

func TestRemovedPoolsAreNotExported(t *testing.T) {
	p, err := pool.New[int](pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}, pool.Config{LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	c, _ := health.New(health.Config{})
	_ = c.Add("a", health.FromPool(p))
	_ = c.Add("b", health.FromPool(p))
	reg := prom.NewRegistry()
	reg.MustRegister(respoolprom.NewCollector(c))
	if n := len(scrape(t, reg)["respool_objects"].GetMetric()); n != 2 {
		t.Fatalf("%d pools exported, want 2", n)
	}
	c.Remove("a")
	if n := len(scrape(t, reg)["respool_objects"].GetMetric()); n != 1 {
		t.Fatalf("after Remove: %d pools exported, want 1", n)
	}
}

// waitUntil polls cond, yielding between polls, and fails the test if it
// does not hold within 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// sharedBudget is a pool.Budget shared with other processes that says what
// share it holds.
type sharedBudget struct{}

func (sharedBudget) Acquire(context.Context) (func(), error) { return func() {}, nil }
func (sharedBudget) Stats() pool.BudgetStats {
	return pool.BudgetStats{Held: 5, Share: 3, Members: 4, Borrowed: 2, StoreDown: true, Refused: 7}
}

// A pool whose Budget reports itself exports its share; one without does not.
func TestBudgetMetrics(t *testing.T) {
	f := pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}
	shared, err := pool.New(f, pool.Config{MaxObjects: 1, Budget: sharedBudget{}, LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close(context.Background())
	alone, err := pool.New(f, pool.Config{MaxObjects: 1, LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close(context.Background())
	checker, _ := health.New(health.Config{})
	_ = checker.Add("shared", health.FromPool(shared))
	_ = checker.Add("alone", health.FromPool(alone))
	reg := prom.NewRegistry()
	reg.MustRegister(respoolprom.NewCollector(checker))
	mfs := scrape(t, reg)
	pl := map[string]string{"pool": "shared"}
	for _, tc := range []struct {
		name string
		typ  dto.MetricType
		want float64
	}{
		{"respool_budget_held", dto.MetricType_GAUGE, 5},
		{"respool_budget_share", dto.MetricType_GAUGE, 3},
		{"respool_budget_members", dto.MetricType_GAUGE, 4},
		{"respool_budget_borrowed", dto.MetricType_GAUGE, 2},
		{"respool_budget_store_down", dto.MetricType_GAUGE, 1},
		{"respool_budget_refused_total", dto.MetricType_COUNTER, 7},
	} {
		got, typ := value(t, mfs, tc.name, pl)
		if typ != tc.typ || got != tc.want {
			t.Errorf("%s = %v (%v), want %v (%v)", tc.name, got, typ, tc.want, tc.typ)
		}
		if n := len(mfs[tc.name].GetMetric()); n != 1 {
			t.Errorf("%s exported for %d pools; want only the shared one", tc.name, n)
		}
	}
}
