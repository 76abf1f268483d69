package clocktest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respool/respool/clock/clocktest"
)

// A test moves the clock once the code under test waits on it: no sleep.
func Example() {
	clk := clocktest.New(time.Time{})
	done := make(chan time.Duration)
	start := clk.Now()
	go func() { // the code under test: waits 30 virtual seconds
		<-clk.NewTimer(30 * time.Second).C()
		done <- clk.Since(start)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitTimers(ctx, 1); err != nil { // it is waiting
		panic(err)
	}
	next, _ := clk.Next()
	fmt.Println("it waits until", next.Sub(start))
	clk.Advance(30 * time.Second)
	fmt.Println("it woke after", <-done)
	// Output:
	// it waits until 30s
	// it woke after 30s
}
