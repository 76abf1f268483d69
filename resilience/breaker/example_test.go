package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
)

func Example() {
	b, err := breaker.New(breaker.Config{
		Name:         "orders-db",
		WindowSize:   4, // judge the last 4 calls
		FailureRate:  0.5,
		OpenDelay:    delay.Strategy{Kind: delay.Constant, Initial: 30 * time.Second},
		MinimumCalls: 4,
	})
	if err != nil {
		panic(err)
	}
	query := func(context.Context) (int, error) { return 0, errors.New("connection refused") }
	for range 4 {
		_, _ = resilience.Do(context.Background(), b, query)
	}
	_, err = resilience.Do(context.Background(), b, query)
	fmt.Println(b.State(), errors.Is(err, breaker.ErrOpen))
	if at, ok := resilience.RetryAfter(err); ok {
		fmt.Println("retry in about", time.Until(at).Round(time.Second))
	}
	// Output:
	// open true
	// retry in about 30s
}
