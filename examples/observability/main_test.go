package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/respool/respool/resilience/breaker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitBound bounds every wait of these tests.
const waitBound = 10 * time.Second

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	client := &http.Client{Timeout: waitBound}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// scrape reads /metrics as Prometheus would and parses it.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	status, b := get(t, base+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", status, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// metric returns the metric of family name for pool orders whose labels
// include more, and the family's type.
func metric(t *testing.T, mfs map[string]*dto.MetricFamily, name string, more ...string) (*dto.Metric, dto.MetricType) {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	want := map[string]string{"pool": poolName}
	for i := 0; i+1 < len(more); i += 2 {
		want[more[i]] = more[i+1]
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
		return m, mf.GetType()
	}
	t.Fatalf("no metric %s%v", name, want)
	return nil, 0
}

// TestScrape runs workload rounds on the pool, then checks what a scrape of
// /metrics, /readyz and /health shows; then, the circuit forced open,
// that /readyz answers 503 and the metrics show it.
func TestScrape(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	o, err := newObserved(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := o.Close(); err != nil {
			t.Error(err)
		}
	}()
	srv := httptest.NewServer(o)
	defer srv.Close()
	const rounds = 3
	for range rounds {
		if err := o.work(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stats := o.connector.Stats()

	mfs := scrape(t, srv.URL)
	takes, typ := metric(t, mfs, "respool_takes_total")
	if typ != dto.MetricType_COUNTER || takes.GetCounter().GetValue() < rounds*8 {
		t.Errorf("respool_takes_total: %v %v; want a counter ≥ %d", typ, takes, rounds*8)
	}
	total, typ := metric(t, mfs, "respool_objects")
	if typ != dto.MetricType_GAUGE || total.GetGauge().GetValue() < 1 || total.GetGauge().GetValue() > 4 {
		t.Errorf("respool_objects: %v %v; want a gauge in [1, 4]", typ, total)
	}
	if m, _ := metric(t, mfs, "respool_max_objects"); m.GetGauge().GetValue() != 4 {
		t.Errorf("respool_max_objects: %v; want 4 (respool_max_conns)", m)
	}
	// A creation started for a caller whom a connection given back served
	// may end after the rounds: the scrape counts between the two reads.
	if m, _ := metric(t, mfs, "respool_creates_total"); m.GetCounter().GetValue() < float64(stats.Creates) ||
		m.GetCounter().GetValue() > float64(o.connector.Stats().Creates) {
		t.Errorf("respool_creates_total: %v; want the pool's, %d or more as the scrape began", m, stats.Creates)
	}
	wait, typ := metric(t, mfs, "respool_acquire_wait_seconds")
	if typ != dto.MetricType_HISTOGRAM || wait.GetHistogram().GetSampleCount() < rounds*8 {
		t.Errorf("respool_acquire_wait_seconds: %v %v; want a histogram of every take", typ, wait)
	}
	if m, _ := metric(t, mfs, "respool_breaker_state", "state", "closed"); m.GetGauge().GetValue() != 1 {
		t.Errorf("respool_breaker_state{state=closed}: %v; want 1", m)
	}

	// OpenTelemetry: the same pool, the semantic conventions' names.
	status, b := get(t, srv.URL+"/otel")
	var scopes []struct {
		Metrics []struct {
			Name string
			Unit string
			Data struct {
				DataPoints []struct {
					Attributes []struct{ Key string }
					Count      uint64 // a histogram's
				}
			}
		}
	}
	if err := json.Unmarshal(b, &scopes); status != http.StatusOK || err != nil || len(scopes) != 1 {
		t.Fatalf("/otel: %d %s (%v); want the metrics of one scope", status, b, err)
	}
	got := map[string]string{}
	for _, m := range scopes[0].Metrics {
		got[m.Name] = m.Unit
		if m.Name == "db.client.connection.wait_time" && (len(m.Data.DataPoints) != 1 || m.Data.DataPoints[0].Count < rounds*8) {
			t.Errorf("/otel: %s %+v; want one point counting every take", m.Name, m.Data)
		}
	}
	for name, unit := range map[string]string{"db.client.connection.count": "{connection}", "db.client.connection.max": "{connection}",
		"db.client.connection.wait_time": "s", "db.client.connection.use_time": "s", "respool.breaker.state": "{state}"} {
		if got[name] != unit {
			t.Errorf("/otel: %s in %q; want it in %q (all: %v)", name, got[name], unit, got)
		}
	}

	if status, b := get(t, srv.URL+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz: %d %s; want 200", status, b)
	}
	status, b = get(t, srv.URL+"/health")
	var report struct {
		Pools []struct {
			Name       string `json:"name"`
			MaxObjects int    `json:"max_objects"`
			Takes      uint64 `json:"takes"`
			Breaker    *struct {
				State string `json:"state"`
			} `json:"breaker"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(b, &report); status != http.StatusOK || err != nil || len(report.Pools) != 1 {
		t.Fatalf("/health: %d %s (%v); want the report of one pool", status, b, err)
	}
	if p := report.Pools[0]; p.Name != poolName || p.MaxObjects != 4 || p.Takes < rounds*8 || p.Breaker == nil || p.Breaker.State != "closed" {
		t.Errorf("/health: %s; want orders, 4 connections, its takes, the breaker closed", b)
	}

	// The circuit forced open, as an operator would (an automatic opening
	// would close again after its open delay): not ready.
	if err := o.connector.Breaker().TransitionTo(breaker.ForcedOpen); err != nil {
		t.Fatal(err)
	}
	if status, b := get(t, srv.URL+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(string(b), "circuit breaker forced_open") {
		t.Errorf("/readyz with the circuit open: %d %s; want 503, circuit breaker forced_open", status, b)
	}
	mfs = scrape(t, srv.URL)
	if m, _ := metric(t, mfs, "respool_breaker_state", "state", "forced_open"); m.GetGauge().GetValue() != 1 {
		t.Errorf("respool_breaker_state{state=forced_open}: %v; want 1", m)
	}
	if m, _ := metric(t, mfs, "respool_breaker_transitions_total"); m.GetCounter().GetValue() != 1 {
		t.Errorf("respool_breaker_transitions_total: %v; want 1", m)
	}
}

// TestRun runs the command on a loopback port: it serves /readyz and
// /metrics with the workload running, and stops when its context ends.
func TestRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, ln, &out) }()
	base := "http://" + ln.Addr().String()
	if status, b := get(t, base+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz: %d %s; want 200", status, b)
	}
	metric(t, scrape(t, base), "respool_takes_total")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitBound):
		t.Fatal("run did not stop")
	}
	t.Log(out.String())
}
