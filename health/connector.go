package health

import (
	"context"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
)

// Guarded is a pool with the breaker and pause in front of it: a
// *respool.Connector is one (Stats, Breaker, Pause). A nil Breaker or Pause
// (turned off) is left out of reports and readiness.
type Guarded interface {
	Stats() pool.Stats
	Breaker() *breaker.Breaker
	Pause() *pause.Pause
}

// FromConnector returns the Source of c: its Stats, Breaker and Pause, and
// ping as its Probe (none when ping is nil). For a database/sql Connector,
// ping is the *sql.DB's PingContext: a round trip to the server on a pooled
// connection, through the breaker (a ping that succeeds while the circuit
// is half-open closes it). Its Reset and Resize, when it has them (a
// *respool.Connector has), serve the admin endpoints (Config.AdminPath); its
// Observe, when it has one, is the Source's. A
// closed Connector's Stats say Closed, so the
// Source is not ready ("closed") without a ping; a closed *sql.DB fails the
// ping.
//
//	db := sql.OpenDB(connector)
//	checker.Add(connector.Name(), health.FromConnector(connector, db.PingContext))
func FromConnector(c Guarded, ping func(ctx context.Context) error) Source {
	s := Source{Stats: c.Stats, Breaker: c.Breaker(), Pause: c.Pause(), Probe: ping}
	if r, ok := c.(interface{ Reset() }); ok {
		s.Reset = r.Reset
	}
	if r, ok := c.(interface {
		Resize(maxConns, minIdle int) error
	}); ok {
		s.Resize = r.Resize
	}
	if o, ok := c.(interface{ Observe(*pool.Observer) }); ok {
		s.Observe = o.Observe
	}
	return s
}
