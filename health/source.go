package health

import (
	"context"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/ratelimit"
)

// Source is what a Checker reads about one pool. Stats is required; the
// other fields are optional, and a nil one is left out of reports and
// readiness.
type Source struct {
	// Stats returns the pool's statistics. A pool whose Stats say Closed is
	// not ready, for good.
	Stats func() pool.Stats
	// Probe obtains an object and gives it back, within ctx: readiness
	// fails when it returns an error. Nil: readiness does not probe.
	Probe func(ctx context.Context) error
	// Breaker, Pause and Limiter are the mechanisms guarding the pool, if
	// any: reports show their state, and an open breaker or a holding
	// pause makes the source not ready.
	Breaker *breaker.Breaker
	Pause   *pause.Pause
	Limiter *ratelimit.Limiter
	// Reset and Resize change the pool, for the Handler's admin endpoints
	// (Config.AdminPath): pool.Pool's Reset and Resize, or a respool
	// Connector's. Nil: the source offers none.
	Reset  func()
	Resize func(maxObjects, minIdle int) error
	// Observe sets the pool's Observer (pool.Pool.Observe, or a respool
	// Connector's), for a metrics library that records each wait, creation
	// and hold (module github.com/respool/respool/otel). Nil: the source
	// offers none.
	Observe func(*pool.Observer)
}

// FromPool returns the Source of p: its Stats, Reset and Resize, and a Probe that
// takes an object (the pool's checks and hooks run, as for any caller) and
// gives it back at once. When the object has a method Ping(ctx) error (a
// *pgx.Conn has), the Probe pings it too, and discards it if that fails.
//
// For a database/sql Connector (package respool), whose idle connections
// are not pinged on take, use FromConnector(connector, db.PingContext): the
// ping makes readiness see a server that went away at once, and the
// Connector's breaker and pause are added.
func FromPool[T any](p *pool.Pool[T]) Source {
	return Source{
		Stats:   p.Stats,
		Reset:   p.Reset,
		Resize:  p.Resize,
		Observe: p.Observe,
		Probe: func(ctx context.Context) error {
			h, err := p.Take(ctx)
			if err != nil {
				return err
			}
			if pinger, ok := any(h.Value()).(interface{ Ping(context.Context) error }); ok {
				if err := pinger.Ping(ctx); err != nil {
					_ = h.Discard()
					return err
				}
			}
			return h.GiveBack()
		},
	}
}
