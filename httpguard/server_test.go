package httpguard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/httpguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newServer(t *testing.T, c httpguard.ServerConfig) *httpguard.Server {
	t.Helper()
	s, err := httpguard.NewServer(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call makes a request to a real HTTP server and returns its status,
// Retry-After and body.
func call(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

func TestQueueFullIs503WithRetryAfter(t *testing.T) {
	p, err := pool.New[int](pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }},
		pool.Config{MaxObjects: 1, MaxQueueSize: 1, LeakTrackingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	s := newServer(t, httpguard.ServerConfig{DefaultRetryAfter: 2 * time.Second})
	srv := httptest.NewServer(s.Handler(func(w http.ResponseWriter, r *http.Request) error {
		h, err := p.Take(r.Context())
		if err != nil {
			return err
		}
		defer h.GiveBack()
		_, _ = io.WriteString(w, "served")
		return nil
	}))
	defer srv.Close()

	if code, _, body := call(t, srv.URL); code != 200 || body != "served" {
		t.Fatalf("idle pool: %d %q", code, body)
	}
	// The only object held, one caller queued: the next request is refused.
	held, _ := p.Take(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		if h, err := p.Take(ctx); err == nil {
			_ = h.GiveBack()
		}
	}()
	waitUntil(t, "the caller queued", func() bool { return p.Stats().Queued == 1 })
	code, ra, body := call(t, srv.URL)
	cancel()
	<-queued
	_ = held.GiveBack()
	if code != http.StatusServiceUnavailable || ra != "2" || strings.Contains(body, "queue") {
		t.Fatalf("queue full: %d Retry-After %q body %q, want 503, 2, no error text", code, ra, body)
	}
}

// TestWriteErrorAnswersRefusals: a pool's refusal gets 503, a rate
// limiter's 429, each with a Retry-After in whole seconds, rounded up: the
// time the error carries from now, or the default of 1s. Any other error is
// a plain 500.
func TestWriteErrorAnswersRefusals(t *testing.T) {
	clock := clocktest.New(time.Time{})
	s := newServer(t, httpguard.ServerConfig{Clock: clock})
	now := clock.Now()
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		retryAfter string
	}{
		{"queue full", fmt.Errorf("take: %w", pool.ErrQueueFull), 503, "1"},
		{"overloaded", &pool.OverloadError{}, 503, "1"},
		{"rate limited", ratelimit.ErrLimited, 429, "1"},
		{"failed fast", &pool.CreateError{Err: errors.New("refused"), FailedFast: true, RetryAt: now.Add(2500 * time.Millisecond)}, 503, "3"},
		{"acquire timeout", fmt.Errorf("take: %w", pool.ErrAcquireTimeout), 503, "1"},
	} {
		rec := httptest.NewRecorder()
		s.WriteError(rec, httptest.NewRequest("GET", "/", nil), tc.err)
		if ra := rec.Header().Get("Retry-After"); rec.Code != tc.status || ra != tc.retryAfter {
			t.Errorf("%s: %d Retry-After %q, want %d and %s", tc.name, rec.Code, ra, tc.status, tc.retryAfter)
		}
	}
	rec := httptest.NewRecorder()
	s.WriteError(rec, httptest.NewRequest("GET", "/", nil), errors.New("password=hunter2 rejected"))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "hunter2") || rec.Header().Get("Retry-After") != "" {
		t.Errorf("other error: %d %q, Retry-After %q, want a plain 500 without one", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
}

func TestAdmitAnswers429ForTheLimiterAnd503ForTheBreaker(t *testing.T) {
	clock := clocktest.New(time.Time{})
	lim, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Permits: 1, Period: time.Minute}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, httpguard.ServerConfig{Clock: clock})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := httptest.NewServer(s.Admit(lim)(ok))
	defer srv.Close()
	if code, _, _ := call(t, srv.URL); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code, ra, _ := call(t, srv.URL); code != http.StatusTooManyRequests || ra != "60" {
		t.Fatalf("second request: %d Retry-After %q, want 429 and 60", code, ra)
	}

	b, err := breaker.New(breaker.Config{Clock: clock, MinimumCalls: 1, FailureRate: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	fail := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) })
	bsrv := httptest.NewServer(s.Admit(b)(fail))
	defer bsrv.Close()
	if code, _, _ := call(t, bsrv.URL); code != 500 {
		t.Fatalf("failing handler: %d", code)
	}
	if b.State() != breaker.Open {
		t.Fatalf("breaker %v after a 500, want open", b.State())
	}
	if code, ra, _ := call(t, bsrv.URL); code != http.StatusServiceUnavailable || ra != "5" {
		t.Fatalf("open breaker: %d Retry-After %q, want 503 and 5 (the first open delay)", code, ra)
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
