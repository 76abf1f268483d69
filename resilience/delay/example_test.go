package delay_test

import (
	"fmt"
	"time"

	"github.com/respool/respool/resilience/delay"
)

func Example() {
	s := delay.Strategy{Kind: delay.Exponential, Initial: 100 * time.Millisecond, Max: time.Second}
	for attempt := 1; attempt <= 5; attempt++ {
		fmt.Print(s.Delay(attempt, 0, nil), " ")
	}
	fmt.Println()
	// Output: 100ms 200ms 400ms 800ms 1s
}
