package pause_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/pause"
)

// errTooManyConnections is a server's back-pressure error.
var errTooManyConnections = errors.New("FATAL: sorry, too many clients already (SQLSTATE 53300)")

func Example() {
	clk := clocktest.New(time.Time{})
	p, err := pause.New(pause.Config{
		Name:  "pg",
		Clock: clk,
		Classify: func(err error) (time.Duration, bool) {
			if errors.Is(err, errTooManyConnections) {
				return 5 * time.Second, true
			}
			return 0, false
		},
	})
	if err != nil {
		panic(err)
	}
	query := func(context.Context) (int, error) { return 0, errTooManyConnections }
	_, _ = resilience.Do(context.Background(), p, query)

	s := p.State()
	fmt.Println(s.Open, s.Until.Sub(clk.Now()), s.Reason == errTooManyConnections)

	clk.Advance(5 * time.Second) // the next caller goes first, alone, as the probe
	_, _ = resilience.Do(context.Background(), p, func(context.Context) (int, error) { return 1, nil })
	fmt.Println(p.State().Open)
	// Output:
	// false 5s true
	// true
}
