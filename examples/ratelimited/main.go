// Command ratelimited runs respool's pool over a resource that is not a
// database: clients of an HTTP API that limits its callers. When the API
// answers 429 Too Many Requests with Retry-After, one pool-wide pause
// (resilience/pause) holds every caller until then, instead of each caller
// finding out for itself and knocking again: the server sees a handful of
// 429s, not one per caller, and the calls that met one are retried once the
// pause ends (resilience/retry).
//
// The API is a local httptest server: it serves 100 calls, then answers 429
// with Retry-After: 1 (second) for a second, then serves 100 more.
//
//	go run ./ratelimited
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/retry"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ratelimited:", err)
		os.Exit(1)
	}
}

const (
	clients = 4   // API clients in the pool: calls in flight at most
	callers = 16  // goroutines calling the API
	calls   = 8   // calls per caller
	quota   = 100 // calls the API serves before it asks to slow down
)

func run(ctx context.Context, out io.Writer) error {
	api := newAPI(quota, time.Second)
	defer api.Close()

	// The pool's objects are API clients: a session each (made by a login
	// call), at most `clients` of them.
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	var sessions atomic.Int64
	p, err := pool.New[*apiClient](pool.Factory[*apiClient]{
		Create: func(ctx context.Context) (*apiClient, error) {
			return &apiClient{http: &http.Client{Transport: transport}, url: api.URL, session: sessions.Add(1)}, nil
		},
	}, pool.Config{Name: "api", MaxObjects: clients})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(cctx)
	}()

	// One pause for the whole pool: a 429's Retry-After closes it for
	// everyone.
	gate, err := pause.New(pause.Config{Name: "api", Classify: retryAfter})
	if err != nil {
		return err
	}
	defer gate.Stop()
	// A call that met the 429 is tried again when the pause ends.
	again, err := retry.New(retry.Config[string]{MaxAttempts: 4, RetryAfter: retryAfter,
		RetryOn: func(err error) bool { _, ok := retryAfter(err); return ok }})
	if err != nil {
		return err
	}
	call := func(ctx context.Context) (string, error) {
		return again.Do(ctx, func(ctx context.Context) (string, error) {
			h, err := p.Take(ctx)
			if err != nil {
				return "", err
			}
			defer func() { _ = h.GiveBack() }()
			// The gate is passed with a client in hand, just before the
			// call: only the calls in flight can meet a 429.
			return resilience.Do(ctx, gate, func(ctx context.Context) (string, error) {
				return h.Value().get(ctx, "/quote")
			})
		})
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var ok, failed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls {
				if _, err := call(ctx); err != nil {
					failed.Add(1)
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()

	st := gate.State()
	fmt.Fprintf(out, "%d callers made %d calls through %d pooled API clients in %v\n",
		callers, callers*calls, clients, time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(out, "served: %d, failed: %d\n", ok.Load(), failed.Load())
	fmt.Fprintf(out, "the API answered 429 with Retry-After %d times (calls in flight when it first did: at most %d)\n",
		api.tooMany.Load(), clients)
	fmt.Fprintf(out, "pool-wide pauses: %d, the last for %v; retries: %d\n", st.Pauses, st.LastPause, again.Stats().Retries)
	switch {
	case failed.Load() > 0:
		return fmt.Errorf("%d calls failed (first: %w)", failed.Load(), firstErr)
	case api.tooMany.Load() == 0:
		return errors.New("the API never asked to slow down")
	case api.tooMany.Load() > clients:
		return fmt.Errorf("the API answered 429 %d times: more than the %d calls in flight", api.tooMany.Load(), clients)
	}
	return nil
}

// apiClient is one pooled client of the API: an HTTP client and a session.
type apiClient struct {
	http    *http.Client
	url     string
	session int64
}

// tooManyRequests is the API's 429, with its Retry-After.
type tooManyRequests struct{ retryAfter time.Duration }

func (e *tooManyRequests) Error() string {
	return fmt.Sprintf("429 Too Many Requests (Retry-After %v)", e.retryAfter)
}

// retryAfter is the pause's and the retry's classifier: a 429 asks
// everyone to wait its Retry-After.
func retryAfter(err error) (time.Duration, bool) {
	var tm *tooManyRequests
	if errors.As(err, &tm) {
		return tm.retryAfter, true
	}
	return 0, false
}

func (c *apiClient) get(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Session", strconv.FormatInt(c.session, 10))
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return string(body), nil
	case http.StatusTooManyRequests:
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil {
			secs = 1
		}
		return "", &tooManyRequests{retryAfter: time.Duration(secs) * time.Second}
	}
	return "", fmt.Errorf("GET %s: %s", path, resp.Status)
}

// api is the rate-limited API: it serves quota calls, then answers 429
// with Retry-After for cooldown, then serves quota calls again.
type api struct {
	*httptest.Server
	tooMany atomic.Int64

	mu        sync.Mutex
	quota     int
	left      int       // calls left before it asks to slow down; guarded by mu
	coolUntil time.Time // guarded by mu
}

func newAPI(quota int, cooldown time.Duration) *api {
	a := &api{quota: quota, left: quota}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		now := time.Now()
		limited := now.Before(a.coolUntil)
		switch {
		case limited:
		case a.left == 0 && a.coolUntil.IsZero():
			a.coolUntil, limited = now.Add(cooldown), true
		case a.left == 0: // the cooldown is over: a new quota
			a.left, a.coolUntil = a.quota-1, time.Time{}
		default:
			a.left--
		}
		a.mu.Unlock()
		if limited {
			a.tooMany.Add(1)
			w.Header().Set("Retry-After", strconv.Itoa(int(cooldown/time.Second)))
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, "quote for session %s", r.Header.Get("X-Session"))
	}))
	return a
}
