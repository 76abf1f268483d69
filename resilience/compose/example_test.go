package compose_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/compose"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

func Example() {
	r, err := retry.New(retry.Config[int]{MaxAttempts: 3, Delay: delay.Strategy{Kind: delay.Constant, Initial: 10 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	b, err := breaker.New(breaker.Config{Name: "db"})
	if err != nil {
		panic(err)
	}
	s := &compose.Stack[int]{Retry: r, Breaker: b}
	n, err := s.Do(context.Background(), func(context.Context) (int, error) {
		return 42, nil // a query, say
	})
	fmt.Println(n, err)
	// Output: 42 <nil>
}
