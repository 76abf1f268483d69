package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

func Example() {
	l, err := ratelimit.New(ratelimit.Config{
		Name:  "reports",
		Limit: ratelimit.Limit{Permits: 2, Period: time.Second}, // token bucket, burst 2
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(l.TryAcquire(1) == nil, l.TryAcquire(1) == nil)
	err = l.TryAcquire(1)
	at, _ := resilience.RetryAfter(err)
	fmt.Println(errors.Is(err, ratelimit.ErrLimited), time.Until(at).Round(100*time.Millisecond))
	// Output:
	// true true
	// true 500ms
}

// A keyed limiter gives each tenant its own limit; waiting callers queue.
func ExampleKeyed() {
	k, err := ratelimit.NewKeyed(ratelimit.Config{
		Limit:     ratelimit.Limit{Algorithm: ratelimit.SlidingWindow, Permits: 100, Period: time.Minute},
		QueueSize: 10,
		MaxWait:   time.Second,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(k.Acquire(context.Background(), "tenant-42", 1))
	// Output: <nil>
}
