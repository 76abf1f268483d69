package health_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/health"
	"github.com/respool/respool/internal/fmttest"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server stands for a database: while down, new objects cannot be made
// and idle ones fail their check on take.
type server struct{ down atomic.Bool }

var errDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused (postgres://app:s3cret@db/app)")

func (s *server) factory() pool.Factory[int] {
	return pool.Factory[int]{
		Create: func(context.Context) (int, error) {
			if s.down.Load() {
				return 0, errDown
			}
			return 1, nil
		},
		Validate: func(int) error {
			if s.down.Load() {
				return errDown
			}
			return nil
		},
	}
}

func newPool(t *testing.T, s *server, cfg pool.Config) *pool.Pool[int] {
	t.Helper()
	cfg.LeakTrackingDisabled = true
	cfg.BackoffDisabled = true
	p, err := pool.New[int](s.factory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return p
}

func newChecker(t *testing.T, cfg health.Config) *health.Checker {
	t.Helper()
	c, err := health.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func TestReadinessFlipsWhenTheServerStops(t *testing.T) {
	var s server
	p := newPool(t, &s, pool.Config{MaxObjects: 2, Name: "orders"})
	c := newChecker(t, health.Config{ProbeTimeout: 5 * time.Second})
	if err := c.Add("orders", health.FromPool(p)); err != nil {
		t.Fatal(err)
	}
	h := c.Handler()

	if code, body := get(t, h, "/readyz"); code != http.StatusOK || !strings.Contains(body, `"ready": true`) {
		t.Fatalf("up: /readyz = %d %s, want 200 ready", code, body)
	}
	s.down.Store(true)
	code, body := get(t, h, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"ready": false`) || !strings.Contains(body, "connection refused") {
		t.Fatalf("down: /readyz = %d %s, want 503 naming the error", code, body)
	}
	if strings.Contains(body, "s3cret") {
		t.Fatalf("readiness shows the password: %s", body)
	}
	if code, _ := get(t, h, "/livez"); code != http.StatusOK {
		t.Fatalf("down: /livez = %d, want 200: a database down must not restart the process", code)
	}
	s.down.Store(false)
	if code, body := get(t, h, "/readyz"); code != http.StatusOK {
		t.Fatalf("up again: /readyz = %d %s", code, body)
	}
	p.StartClose()
	if rd := c.Ready(context.Background()); rd.Ready || rd.Pools[0].Reason != "closed" {
		t.Fatalf("closed: %+v, want not ready, closed", rd)
	}
	if !c.Report().Pools[0].Closed {
		t.Fatal("closed: the report says the pool is open")
	}
}

// closedConnector is a Guarded whose pool is closed and which has neither
// breaker nor pause, as a *respool.Connector after Close with both off.
type closedConnector struct{}

func (closedConnector) Stats() pool.Stats         { return pool.Stats{Closed: true, MaxObjects: 4} }
func (closedConnector) Breaker() *breaker.Breaker { return nil }
func (closedConnector) Pause() *pause.Pause       { return nil }

// A Source reads closed from its Stats: FromConnector's is reported closed
// and not ready for that reason, not for its ping's error.
func TestAClosedConnectorIsNotReadyAndReportedClosed(t *testing.T) {
	c := newChecker(t, health.Config{})
	pinged := false
	ping := func(context.Context) error { pinged = true; return errors.New("sql: database is closed") }
	if err := c.Add("orders", health.FromConnector(closedConnector{}, ping)); err != nil {
		t.Fatal(err)
	}
	if rd := c.Ready(context.Background()); rd.Ready || rd.Pools[0].Reason != "closed" || pinged {
		t.Fatalf("closed connector: %+v (pinged %v), want not ready, closed, without a ping", rd, pinged)
	}
	if !c.Report().Pools[0].Closed {
		t.Fatal("closed connector: the report says the pool is open")
	}
	if _, body := get(t, c.Handler(), "/health"); !strings.Contains(body, `"closed": true`) {
		t.Fatalf("/health = %s, want closed true", body)
	}
}

func TestReadinessIsBoundedWhenNoObjectComesBack(t *testing.T) {
	var s server
	p := newPool(t, &s, pool.Config{MaxObjects: 1})
	h, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.GiveBack()
	c := newChecker(t, health.Config{ProbeTimeout: time.Millisecond})
	_ = c.Add("one", health.FromPool(p))
	rd := c.Ready(context.Background())
	if rd.Ready || !strings.Contains(rd.Pools[0].Reason, "probe failed (bound 1ms)") {
		t.Fatalf("readiness = %+v, want not ready: probe failed (bound 1ms)", rd)
	}
}

func TestBreakerOpenAndPauseMakeItNotReady(t *testing.T) {
	var s server
	p := newPool(t, &s, pool.Config{MaxObjects: 1})
	clock := clocktest.New(time.Time{})
	b, err := breaker.New(breaker.Config{Name: "db", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := pause.New(pause.Config{Name: "db", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Stop()
	src := health.FromPool(p)
	src.Breaker, src.Pause = b, pa
	c := newChecker(t, health.Config{})
	_ = c.Add("db", src)

	if rd := c.Ready(context.Background()); !rd.Ready {
		t.Fatalf("closed breaker, open gate: %+v, want ready", rd)
	}
	if err := b.TransitionTo(breaker.Open); err != nil {
		t.Fatal(err)
	}
	rd := c.Ready(context.Background())
	if rd.Ready || !strings.Contains(rd.Pools[0].Reason, "circuit breaker open") || rd.Pools[0].RetryAt.IsZero() {
		t.Fatalf("open breaker: %+v, want not ready with its half-open time", rd)
	}
	rep := c.Report().Pools[0]
	if rep.Breaker == nil || rep.Breaker.State != breaker.Open {
		t.Fatalf("report breaker = %+v, want open", rep.Breaker)
	}
	if err := b.TransitionTo(breaker.Closed); err != nil {
		t.Fatal(err)
	}
	pa.Hold(time.Minute, errors.New("too many connections for role \"app\" (password=hunter2)"))
	rd = c.Ready(context.Background())
	if rd.Ready || !strings.Contains(rd.Pools[0].Reason, "paused") || !rd.Pools[0].RetryAt.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("pause: %+v, want not ready until now+1m", rd)
	}
	rep = c.Report().Pools[0]
	if rep.Pause == nil || !rep.Pause.Holding || strings.Contains(rep.Pause.Reason, "hunter2") || !strings.Contains(rep.Pause.Reason, "password=xxxxx") {
		t.Fatalf("report pause = %+v, want holding, reason redacted", rep.Pause)
	}
	clock.Advance(time.Minute)
	if rd := c.Ready(context.Background()); !rd.Ready {
		t.Fatalf("after the pause: %+v, want ready", rd)
	}
}

func TestReportCountsAndJSON(t *testing.T) {
	var s server
	p := newPool(t, &s, pool.Config{MaxObjects: 1, MaxQueueSize: 1, Name: "orders"})
	h, err := p.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// One caller queued for the object held, the next refused: queue full.
	waited := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		h2, err := p.Take(ctx)
		if err == nil {
			err = h2.GiveBack()
		}
		waited <- err
	}()
	waitUntil(t, "the waiter queued", func() bool { return p.Stats().Queued == 1 })
	if _, err := p.Take(context.Background()); !errors.Is(err, pool.ErrQueueFull) {
		t.Fatalf("third Take: %v, want ErrQueueFull", err)
	}
	cancel()
	<-waited
	_ = h.Discard()
	s.down.Store(true)
	if _, err := p.Take(context.Background()); err == nil {
		t.Fatal("Take with the server down succeeded")
	}

	c := newChecker(t, health.Config{Clock: clocktest.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))})
	_ = c.Add("orders", health.FromPool(p))
	rep := c.Report()
	if len(rep.Pools) != 1 {
		t.Fatalf("report has %d pools", len(rep.Pools))
	}
	r := rep.Pools[0]
	if r.Name != "orders" || r.MaxObjects != 1 || r.QueueFull != 1 || r.CancelledWaits != 1 || r.Takes != 1 ||
		r.Destroys.Discarded != 1 || r.CreateFailures != 1 {
		t.Fatalf("report = %+v", r)
	}
	if !strings.Contains(r.LastCreateError, "connection refused") || strings.Contains(r.LastCreateError, "s3cret") {
		t.Fatalf("LastCreateError = %q, want the error without its password", r.LastCreateError)
	}
	if len(r.AcquireWait) != 3 || r.AcquireWait[0].Q != 0.5 {
		t.Fatalf("AcquireWait = %+v, want the 3 default quantiles", r.AcquireWait)
	}

	code, body := get(t, c.Handler(), "/health")
	if code != http.StatusOK {
		t.Fatalf("/health = %d", code)
	}
	var v struct {
		Time  time.Time `json:"time"`
		Pools []struct {
			Name        string            `json:"name"`
			QueueFull   uint64            `json:"queue_full"`
			Destroys    map[string]uint64 `json:"destroys"`
			LastError   string            `json:"last_create_error"`
			AcquireWait []struct {
				Q       float64 `json:"q"`
				Seconds float64 `json:"seconds"`
			} `json:"acquire_wait"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if len(v.Pools) != 1 || v.Pools[0].QueueFull != 1 || v.Pools[0].Destroys["discarded"] != 1 ||
		v.Pools[0].AcquireWait[2].Q != 0.99 || v.Time.Year() != 2025 || strings.Contains(body, "s3cret") {
		t.Fatalf("JSON = %s", body)
	}
}

func TestHandlerPathsAndMethods(t *testing.T) {
	c := newChecker(t, health.Config{LivePath: "/ops/live", ReadyPath: "/ops/ready", ReportPath: "/ops/report"})
	h := c.Handler()
	for path, want := range map[string]int{"/ops/live": 200, "/ops/ready": 200, "/ops/report": 200, "/livez": 404} {
		if code, _ := get(t, h, path); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ops/ready", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", rec.Code)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg   health.Config
		field string
	}{
		{health.Config{ProbeTimeout: -1}, "ProbeTimeout"},
		{health.Config{Quantiles: []float64{0.5, 1.5}}, "Quantiles"},
		{health.Config{ReadyPath: "ready"}, "ReadyPath"},
		{health.Config{ReportPath: "/livez"}, "ReportPath"},
	} {
		_, err := health.New(tc.cfg)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
	c := newChecker(t, health.Config{})
	err := c.Add("x", health.Source{})
	if ce := (*resilience.ConfigError)(nil); !errors.As(err, &ce) || ce.Mechanism != "health" || ce.Field != "Source.Stats" {
		t.Errorf("Add without Stats = %v, want a ConfigError on Source.Stats", err)
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

// TestPrintingALiveChecker: a Checker printed with any verb while sources
// are added and removed prints the names of its sources, not its insides
// (issue 19 item 18: fmt iterated its map while it changed).
func TestPrintingALiveChecker(t *testing.T) {
	c, err := health.New(health.Config{})
	if err != nil {
		t.Fatal(err)
	}
	src := health.Source{Stats: func() pool.Stats { return pool.Stats{} }}
	if err := c.Add("orders", src); err != nil {
		t.Fatal(err)
	}
	got := fmttest.WhileUsed(c, 200, func(i int) {
		name := fmt.Sprintf("s%d", i%5)
		_ = c.Add(name, src)
		c.Remove(name)
	})
	if !strings.Contains(got, `"orders"`) || strings.Contains(got, "sources") {
		t.Errorf("%%v of a Checker = %s, want its sources' names and no fields", got)
	}
}

// reportingBudget is a pool.Budget shared with other processes that says
// what share it holds.
type reportingBudget struct{}

func (reportingBudget) Acquire(context.Context) (func(), error) { return func() {}, nil }
func (reportingBudget) Stats() pool.BudgetStats {
	return pool.BudgetStats{Held: 5, Share: 3, Members: 4, Borrowed: 2, StoreDown: true, Refused: 7}
}

// A pool whose Budget reports itself has its share in the report and its
// JSON; one without has neither.
func TestReportShowsTheBudgetsShare(t *testing.T) {
	var s server
	shared := newPool(t, &s, pool.Config{MaxObjects: 1, Name: "shared", Budget: reportingBudget{}})
	alone := newPool(t, &s, pool.Config{MaxObjects: 1, Name: "alone"})
	c := newChecker(t, health.Config{})
	_ = c.Add("shared", health.FromPool(shared))
	_ = c.Add("alone", health.FromPool(alone))
	rep := c.Report()
	if b := rep.Pools[1].Budget; b == nil || b.Share != 3 || b.Borrowed != 2 || !b.StoreDown {
		t.Fatalf("shared pool's budget = %+v; want its Stats", b)
	}
	if b := rep.Pools[0].Budget; b != nil {
		t.Fatalf("lone pool's budget = %+v; want nil", b)
	}
	_, indented := get(t, c.Handler(), "/health")
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(indented)); err != nil {
		t.Fatal(err)
	}
	body := compact.String()
	want := `"budget":{"held":5,"share":3,"members":4,"borrowed":2,"reclaiming":0,"unregistered":0,"store_down":true,"refused":7,"store_errors":0}`
	if !strings.Contains(body, want) || strings.Count(body, `"budget"`) != 1 {
		t.Fatalf("JSON = %s; want the shared pool's %s, and no budget for the other", body, want)
	}
}
