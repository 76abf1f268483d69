package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitBound bounds every wait of these tests.
const waitBound = 10 * time.Second

// get requests path from srv and returns the status, Retry-After and body.
func get(t *testing.T, srv *httptest.Server, path string) (status int, retryAfter, body string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

func newTestService(t *testing.T, o options) (*service, *httptest.Server) {
	t.Helper()
	o.dir = t.TempDir()
	svc, err := newService(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Error(err)
		}
	})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return svc, srv
}

// TestOrder checks the answers of a service that is not overloaded: 200
// with the order, 404, 400.
func TestOrder(t *testing.T) {
	_, srv := newTestService(t, options{})
	status, _, body := get(t, srv, "/orders/2")
	var o struct {
		ID   int64
		Item string
		Qty  int
	}
	if err := json.Unmarshal([]byte(body), &o); status != http.StatusOK || err != nil || o.Item != "croissant" || o.Qty != 1 {
		t.Fatalf("GET /orders/2: %d %q (%v); want 200 and the croissant", status, body, err)
	}
	if status, _, _ := get(t, srv, "/orders/9"); status != http.StatusNotFound {
		t.Errorf("GET /orders/9: %d; want 404", status)
	}
	if status, _, _ := get(t, srv, "/orders/x"); status != http.StatusBadRequest {
		t.Errorf("GET /orders/x: %d; want 400", status)
	}
}

// TestQueueFull checks that a request the pool cannot queue is answered
// 503 with Retry-After, and that the request waiting in the queue is
// served once the connection is back.
func TestQueueFull(t *testing.T) {
	svc, srv := newTestService(t, options{maxConns: 1, maxQueue: 1})
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	held, err := svc.db.Conn(ctx) // the pool's only connection, busy
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan int, 1)
	go func() { // fills the queue
		resp, err := srv.Client().Get(srv.URL + "/orders/1")
		if err != nil {
			waiting <- 0
			return
		}
		resp.Body.Close()
		waiting <- resp.StatusCode
	}()
	for svc.connector.Stats().Queued == 0 { // bounded by ctx
		if ctx.Err() != nil {
			t.Fatal("the request did not queue for the connection")
		}
		runtime.Gosched()
	}
	status, retryAfter, _ := get(t, srv, "/orders/1")
	if status != http.StatusServiceUnavailable || retryAfter != "1" {
		t.Errorf("queue full: %d, Retry-After %q; want 503, 1", status, retryAfter)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case status := <-waiting:
		if status != http.StatusOK {
			t.Errorf("the queued request: %d; want 200", status)
		}
	case <-ctx.Done():
		t.Fatal("the queued request was not served")
	}
	if s := svc.connector.Stats(); s.QueueFull != 1 {
		t.Errorf("pool QueueFull %d; want 1", s.QueueFull)
	}
}

// TestBreakerOpen checks that while the pool's circuit is open, requests
// are answered 503 with the breaker's time as Retry-After, and served again
// once it closes.
func TestBreakerOpen(t *testing.T) {
	svc, srv := newTestService(t, options{openDelay: 30 * time.Second})
	// As the lost connections of a failing database would.
	if err := svc.connector.Breaker().TransitionTo(breaker.Open); err != nil {
		t.Fatal(err)
	}
	status, retryAfter, _ := get(t, srv, "/orders/1")
	if secs, err := strconv.Atoi(retryAfter); status != http.StatusServiceUnavailable || err != nil || secs < 29 || secs > 30 {
		t.Errorf("breaker open: %d, Retry-After %q; want 503, 30 (the open delay)", status, retryAfter)
	}
	if err := svc.connector.Breaker().TransitionTo(breaker.Closed); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := get(t, srv, "/orders/1"); status != http.StatusOK {
		t.Errorf("breaker closed: %d; want 200", status)
	}
}

// TestRateLimited checks that requests past the rate limit are answered
// 429 with the time the next permit comes as Retry-After.
func TestRateLimited(t *testing.T) {
	_, srv := newTestService(t, options{limit: ratelimit.Limit{Permits: 3, Period: time.Minute, Burst: 3}})
	for i := range 3 {
		if status, _, _ := get(t, srv, "/orders/1"); status != http.StatusOK {
			t.Fatalf("request %d within the limit: %d; want 200", i+1, status)
		}
	}
	status, retryAfter, _ := get(t, srv, "/orders/1")
	// A permit every 20s.
	if secs, err := strconv.Atoi(retryAfter); status != http.StatusTooManyRequests || err != nil || secs < 1 || secs > 20 {
		t.Errorf("past the limit: %d, Retry-After %q; want 429, at most 20", status, retryAfter)
	}
}

// TestRun runs the command's server on a loopback port: it serves, and
// stops when its context ends.
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
	// run prints its address only after it began serving; a GET before
	// that waits in the listener's backlog.
	client := &http.Client{Timeout: waitBound}
	resp, err := client.Get("http://" + ln.Addr().String() + "/orders/3")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /orders/3: %d; want 200", resp.StatusCode)
	}
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
