package health

import (
	"context"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
)

// Guarded is a pool with the breaker and pause in front of it: a
// *respool.Connector is one (Pool, Breaker, Pause). A nil
// Breaker or Pause (turned off) is left out of reports and readiness.
type Guarded[T any] interface {
	Pool() *pool.Pool[T]
	Breaker() *breaker.Breaker
	Pause() *pause.Pause
}

// FromConnector returns the Source of c: FromPool(c.Pool()) with c's
// Breaker and Pause, and ping as its Probe unless ping is nil. For a
// database/sql Connector, ping is the *sql.DB's PingContext: a round trip
// to the server on a pooled connection, through the breaker (a ping that
// succeeds while the circuit is half-open closes it).
//
//	db := sql.OpenDB(connector)
//	checker.Add(connector.Name(), health.FromConnector(connector, db.PingContext))
func FromConnector[T any](c Guarded[T], ping func(ctx context.Context) error) Source {
	src := FromPool(c.Pool())
	src.Breaker, src.Pause = c.Breaker(), c.Pause()
	if ping != nil {
		src.Probe = ping
	}
	return src
}
