package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
)

func Example() {
	r, err := retry.New(retry.Config[string]{
		MaxAttempts: 4,
		Delay:       delay.Strategy{Kind: delay.Exponential, Initial: time.Millisecond, Max: 10 * time.Millisecond, Jitter: delay.Full},
	})
	if err != nil {
		panic(err)
	}
	attempts := 0
	v, err := r.Do(context.Background(), func(context.Context) (string, error) {
		attempts++
		if attempts < 3 {
			return "", errors.New("connection reset")
		}
		return "ok", nil
	})
	fmt.Println(v, err, attempts)
	// Output: ok <nil> 3
}
