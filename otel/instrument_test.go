package respoolotel_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/health"
	respoolotel "github.com/respool/respool/otel"
	"github.com/respool/respool/pool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// kind is the data type an instrument's points arrive as.
type kind int

const (
	upDown    kind = iota // a non-monotonic sum (UpDownCounter)
	counter               // a monotonic sum (Counter)
	histogram             // a histogram
	gauge
)

// spec is the table of the pool's instruments, written from the semantic
// conventions for database client metrics (semantic-conventions v1.44.0,
// model/db/metrics.yaml; in development there): name, instrument, unit.
// Every one carries db.client.connection.pool.name; count carries
// db.client.connection.state (idle, used) too.
var spec = []struct {
	name string
	kind kind
	unit string
}{
	{"db.client.connection.count", upDown, "{connection}"},
	{"db.client.connection.idle.max", upDown, "{connection}"},
	{"db.client.connection.idle.min", upDown, "{connection}"},
	{"db.client.connection.max", upDown, "{connection}"},
	{"db.client.connection.pending_requests", upDown, "{request}"},
	{"db.client.connection.timeouts", counter, "{timeout}"},
	{"db.client.connection.create_time", histogram, "s"},
	{"db.client.connection.wait_time", histogram, "s"},
	{"db.client.connection.use_time", histogram, "s"},
}

// collected is one collection of a manual reader, by instrument name.
type collected map[string]metricdata.Metrics

func collect(t *testing.T, r *sdkmetric.ManualReader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	c := collected{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			c[m.Name] = m
		}
	}
	return c
}

// value returns the value of the point of instrument name whose
// attributes, beside the pool's name, are attrs; ok is false if none.
func (c collected) value(t *testing.T, name, pool string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(append([]attribute.KeyValue{attribute.String("db.client.connection.pool.name", pool)}, attrs...)...)
	var points []metricdata.DataPoint[int64]
	switch d := c[name].Data.(type) {
	case metricdata.Sum[int64]:
		points = d.DataPoints
	case metricdata.Gauge[int64]:
		points = d.DataPoints
	default:
		t.Fatalf("%s: data %T; want an int64 sum or gauge", name, c[name].Data)
	}
	for _, p := range points {
		if p.Attributes.Equals(&want) {
			return p.Value
		}
	}
	t.Fatalf("%s: no point with attributes %v", name, want.ToSlice())
	return 0
}

// hist returns the histogram point of instrument name for pool.
func (c collected) hist(t *testing.T, name, pool string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	want := attribute.NewSet(attribute.String("db.client.connection.pool.name", pool))
	d, ok := c[name].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: data %T; want a float64 histogram", name, c[name].Data)
	}
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&want) {
			return p
		}
	}
	t.Fatalf("%s: no point for pool %s", name, pool)
	return metricdata.HistogramDataPoint[float64]{}
}

// checkSpec asserts every instrument of spec: present, of its kind and unit.
func checkSpec(t *testing.T, c collected) {
	t.Helper()
	for _, s := range spec {
		m, ok := c[s.name]
		if !ok {
			t.Errorf("%s: not recorded", s.name)
			continue
		}
		if m.Unit != s.unit {
			t.Errorf("%s: unit %q; want %q", s.name, m.Unit, s.unit)
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			if want := s.kind == counter; !(s.kind == upDown || s.kind == counter) || d.IsMonotonic != want {
				t.Errorf("%s: a sum, monotonic %v; want kind %d", s.name, d.IsMonotonic, s.kind)
			}
		case metricdata.Histogram[float64]:
			if s.kind != histogram {
				t.Errorf("%s: a histogram; want kind %d", s.name, s.kind)
			}
		default:
			t.Errorf("%s: data %T", s.name, m.Data)
		}
	}
}

// The instruments follow the pool on a virtual clock: idle and used
// counts, the sizes, a caller waiting, an acquire timeout, and each wait,
// creation and hold in its bucket; stop ends it all.
func TestInstrumentFollowsThePool(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const createTime = 30 * time.Millisecond
	p, err := pool.New(pool.Factory[int]{Create: func(context.Context) (int, error) {
		clk.Advance(createTime)
		return 1, nil
	}}, pool.Config{Name: "orders", MaxObjects: 2, MinIdle: 1, AcquireTimeout: time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	waitFor(t, func() bool { return p.Stats().Idle == 1 }) // MinIdle's, before the instruments
	stop, err := respoolotel.Instrument("orders", health.FromPool(p), respoolotel.Config{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := p.Take(ctx) // idle: no wait
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.Take(ctx) // created for it: a wait of createTime
	if err != nil {
		t.Fatal(err)
	}
	third := make(chan error, 1)
	go func() {
		_, err := p.Take(ctx)
		third <- err
	}()
	waitFor(t, func() bool { return p.Stats().Waiting == 1 })

	c := collect(t, reader)
	idle := attribute.String("db.client.connection.state", "idle")
	used := attribute.String("db.client.connection.state", "used")
	for _, w := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"db.client.connection.count", []attribute.KeyValue{idle}, 0},
		{"db.client.connection.count", []attribute.KeyValue{used}, 2},
		{"db.client.connection.max", nil, 2},
		{"db.client.connection.idle.max", nil, 2},
		{"db.client.connection.idle.min", nil, 1},
		{"db.client.connection.pending_requests", nil, 1},
		{"db.client.connection.timeouts", nil, 0},
		{"respool.connection.effective_max", nil, 2},
	} {
		if got := c.value(t, w.name, "orders", w.attrs...); got != w.want {
			t.Errorf("while a caller waits: %s %v = %d; want %d", w.name, w.attrs, got, w.want)
		}
	}

	bound, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clk.WaitTimers(bound, 2); err != nil { // the pool's ticker and the third caller's AcquireTimeout
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := <-third; !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("third Take = %v; want ErrAcquireTimeout", err)
	}
	clk.Advance(4 * time.Second)
	first.GiveBack()  // held 5.03 s
	second.GiveBack() // held 5 s

	c = collect(t, reader)
	checkSpec(t, c) // every one recorded by now: the histograms once a value came
	for _, w := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  int64
	}{
		{"db.client.connection.count", []attribute.KeyValue{idle}, 2},
		{"db.client.connection.count", []attribute.KeyValue{used}, 0},
		{"db.client.connection.pending_requests", nil, 0},
		{"db.client.connection.timeouts", nil, 1},
	} {
		if got := c.value(t, w.name, "orders", w.attrs...); got != w.want {
			t.Errorf("after the timeout: %s %v = %d; want %d", w.name, w.attrs, got, w.want)
		}
	}
	// Bounds: 0.001 0.005 0.01 0.05 0.1 0.5 1 5 10 (s); bucket i counts
	// values in (bound i-1, bound i].
	for _, w := range []struct {
		name    string
		count   uint64
		sum     float64
		buckets []uint64
	}{
		{"db.client.connection.wait_time", 2, 0.03, []uint64{1, 0, 0, 1, 0, 0, 0, 0, 0, 0}},
		{"db.client.connection.create_time", 1, 0.03, []uint64{0, 0, 0, 1, 0, 0, 0, 0, 0, 0}},
		{"db.client.connection.use_time", 2, 10.03, []uint64{0, 0, 0, 0, 0, 0, 0, 1, 1, 0}},
	} {
		h := c.hist(t, w.name, "orders")
		if h.Count != w.count || !near(h.Sum, w.sum) || !equal(h.BucketCounts, w.buckets) {
			t.Errorf("%s: count %d, sum %v, buckets %v (bounds %v); want %d, %v, %v",
				w.name, h.Count, h.Sum, h.BucketCounts, h.Bounds, w.count, w.sum, w.buckets)
		}
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h, _ := p.Take(ctx)
	h.GiveBack()
	c = collect(t, reader)
	if _, ok := c["db.client.connection.count"]; ok {
		t.Error("after stop: db.client.connection.count still observed")
	}
	if got := c.hist(t, "db.client.connection.wait_time", "orders").Count; got != 2 {
		t.Errorf("after stop: %d waits recorded; want still 2", got)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		runtime.Gosched()
	}
}

// sharedBudget is a pool.Budget shared with other processes that says what
// share it holds.
type sharedBudget struct{}

func (sharedBudget) Acquire(context.Context) (func(), error) { return func() {}, nil }
func (sharedBudget) Stats() pool.BudgetStats {
	return pool.BudgetStats{Held: 5, Share: 3, Members: 4, Borrowed: 2, StoreDown: true, Refused: 7}
}

// A pool whose Budget reports itself has its share recorded; one without
// has no budget metrics.
func TestInstrumentRecordsTheBudgetsShare(t *testing.T) {
	f := pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}
	shared, err := pool.New(f, pool.Config{MaxObjects: 1, Budget: sharedBudget{}})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close(context.Background())
	alone, err := pool.New(f, pool.Config{MaxObjects: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	for name, p := range map[string]*pool.Pool[int]{"shared": shared, "alone": alone} {
		stop, err := respoolotel.Instrument(name, health.FromPool(p), respoolotel.Config{MeterProvider: mp})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	c := collect(t, reader)
	for name, want := range map[string]int64{"respool.budget.held": 5, "respool.budget.share": 3, "respool.budget.members": 4,
		"respool.budget.borrowed": 2, "respool.budget.store_down": 1, "respool.budget.refused": 7} {
		if got := c.value(t, name, "shared"); got != want {
			t.Errorf("%s = %d; want %d", name, got, want)
		}
		var points int
		switch d := c[name].Data.(type) {
		case metricdata.Sum[int64]:
			points = len(d.DataPoints)
		case metricdata.Gauge[int64]:
			points = len(d.DataPoints)
		}
		if points != 1 {
			t.Errorf("%s has %d points; want the shared pool's only", name, points)
		}
	}
}
