package httpguard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"time"

	"github.com/respool/respool/httpguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/ratelimit"
)

// A service that answers 503 with Retry-After when its pool cannot serve
// a request, and 429 when its rate limiter refuses one, instead of a 500.
func Example() {
	p, err := pool.New[int](pool.Factory[int]{
		Create: func(context.Context) (int, error) { return 1, nil },
	}, pool.Config{MaxObjects: 1, MaxQueueSize: 1})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	limiter, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Permits: 2, Period: time.Minute}})
	if err != nil {
		panic(err)
	}
	guard, err := httpguard.NewServer(httpguard.ServerConfig{})
	if err != nil {
		panic(err)
	}
	handler := guard.Handler(func(w http.ResponseWriter, r *http.Request) error {
		h, err := p.Take(r.Context()) // pool.ErrQueueFull becomes a 503
		if err != nil {
			return err
		}
		defer h.GiveBack()
		fmt.Fprintln(w, "served")
		return nil
	})
	srv := httptest.NewServer(guard.Admit(limiter)(handler))
	defer srv.Close()

	held, _ := p.Take(context.Background()) // the pool's only object, busy
	queued := make(chan struct{})
	go func() { // a caller waiting for it fills the queue
		defer close(queued)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if h, err := p.Take(ctx); err == nil {
			h.GiveBack()
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); p.Stats().Queued == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			fmt.Println("the caller never queued")
			return
		}
	}
	for range 3 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	held.GiveBack()
	<-queued
	// Output:
	// 503 1
	// 503 1
	// 429 30
}

// An HTTP client for an API that answers 429 or 503 with Retry-After: every
// request through the Transport waits out the server's time once one met
// it, then is retried (at most 4 attempts each).
func ExampleNewTransport() {
	tr, err := httpguard.NewTransport(httpguard.TransportConfig{MaxAttempts: 4})
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	client := &http.Client{Transport: tr, Timeout: time.Minute} // the timeout bounds the waits too
	_ = client
	fmt.Println("gate open:", tr.Pause().State().Open)
	// Output: gate open: true
}
