package timeout_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/resilience/timeout"
)

func Example() {
	to, err := timeout.New(timeout.Config{Timeout: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	_, err = timeout.Do(context.Background(), to, func(ctx context.Context) (int, error) {
		<-ctx.Done() // a query that honours its context
		return 0, ctx.Err()
	})
	fmt.Println(errors.Is(err, timeout.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output: true false
}
