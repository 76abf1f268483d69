package httpguard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/httpguard"
)

// limitedAPI answers its first `refuse` requests with 429 Retry-After: 2,
// then 200, counting every request that reaches it.
type limitedAPI struct {
	refuse, seen atomic.Int32
	status       int
}

func (a *limitedAPI) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if a.seen.Add(1) <= a.refuse.Load() {
		w.Header().Set("Retry-After", "2")
		http.Error(w, "slow down", a.status)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

type result struct {
	status int
	body   string
	err    error
}

func get(client *http.Client, url string) chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := client.Get(url)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- result{status: resp.StatusCode, body: string(b)}
	}()
	return ch
}

func newTransport(t *testing.T, c httpguard.TransportConfig) *httpguard.Transport {
	t.Helper()
	tr, err := httpguard.NewTransport(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// A 429 with Retry-After holds every request through the Transport, not
// only the one that met it, and both are served once the server's time has
// passed.
func TestTransportHonoursRetryAfterPoolWide(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			api := &limitedAPI{status: status}
			api.refuse.Store(1)
			srv := httptest.NewServer(api)
			defer srv.Close()
			clock := clocktest.New(time.Time{})
			base := srv.Client().Transport.(*http.Transport)
			defer base.CloseIdleConnections()
			tr := newTransport(t, httpguard.TransportConfig{Base: base, Clock: clock})
			client := &http.Client{Transport: tr}

			first := get(client, srv.URL)
			// The 429 closes the gate: the retry waits on the clock for 2s
			// (the pause's reopening and the retry's own timer).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := clock.WaitTimers(ctx, 2); err != nil {
				t.Fatal(err)
			}
			second := get(client, srv.URL)
			waitUntil(t, "the second request reached the gate", func() bool { return tr.Pause().State().Waiting == 1 })
			if n := api.seen.Load(); n != 1 {
				t.Fatalf("%d requests reached the server during the pause, want 1", n)
			}
			clock.Advance(2 * time.Second)
			for _, ch := range []chan result{first, second} {
				if r := <-ch; r.err != nil || r.status != 200 || r.body != "ok" {
					t.Fatalf("after the pause: %+v, want 200 ok", r)
				}
			}
			if n := api.seen.Load(); n != 3 {
				t.Fatalf("server saw %d requests, want 3 (one refused, two served)", n)
			}
		})
	}
}

// Once attempts run out the server's own 429 is returned, with its body.
func TestTransportReturnsTheLastRefusal(t *testing.T) {
	api := &limitedAPI{status: http.StatusTooManyRequests}
	api.refuse.Store(100)
	srv := httptest.NewServer(api)
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	clock := clocktest.New(time.Time{})
	tr := newTransport(t, httpguard.TransportConfig{Base: base, Clock: clock, MaxAttempts: 1})
	r := <-get(&http.Client{Transport: tr}, srv.URL)
	if r.err != nil || r.status != http.StatusTooManyRequests || !strings.Contains(r.body, "slow down") {
		t.Fatalf("%+v, want the server's 429", r)
	}
	if st := tr.Pause().State(); st.Open || !st.Until.Equal(clock.Now().Add(2*time.Second)) {
		t.Fatalf("pause %+v, want closed for the Retry-After", st)
	}
	clock.Advance(2 * time.Second)
}

// A POST whose body cannot be sent again is not retried.
func TestTransportDoesNotReplayAnUnreplayableBody(t *testing.T) {
	api := &limitedAPI{status: http.StatusServiceUnavailable}
	api.refuse.Store(1)
	srv := httptest.NewServer(api)
	defer srv.Close()
	base := srv.Client().Transport.(*http.Transport)
	defer base.CloseIdleConnections()
	clock := clocktest.New(time.Time{})
	tr := newTransport(t, httpguard.TransportConfig{Base: base, Clock: clock})
	req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("x")))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || api.seen.Load() != 1 {
		t.Fatalf("%d after %d requests, want the 503 after 1", resp.StatusCode, api.seen.Load())
	}
	clock.Advance(2 * time.Second)
}
