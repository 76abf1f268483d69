package dbguard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
)

// A pool of connections made through a Guard, against a server that
// refuses every connection: once the attempts have opened the circuit,
// callers fail at once, and the server sees no attempt until the probe.
func Example() {
	g, err := dbguard.New(dbguard.Config{Breaker: breaker.Config{WindowSize: 3, MinimumCalls: 3, OpenDelay: delay.Strategy{Kind: delay.Constant, Initial: time.Minute}}})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	attempts := 0
	dial := pool.Factory[string]{Create: func(context.Context) (string, error) {
		attempts++
		return "", errRefused // for pgx: respool.PgxFactory's Create
	}}
	p, err := pool.New(dbguard.Factory[string](g, dial),
		pool.Config{MaxObjects: 10, BackPressure: dbguard.BackPressure, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer p.StartClose()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 5 {
		done, err := g.Admit()
		if err != nil { // the circuit is open: do not even ask the pool
			fmt.Println("rejected:", errors.Is(err, breaker.ErrOpen))
			continue
		}
		_, err = p.Take(ctx)
		done()
		fmt.Println("take failed:", errors.Is(err, errRefused), "circuit open:", errors.Is(err, breaker.ErrOpen))
	}
	fmt.Println("attempts:", attempts)
	// Output:
	// take failed: true circuit open: true
	// rejected: true
	// rejected: true
	// rejected: true
	// rejected: true
	// attempts: 3
}
