package respool

import (
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
)

// Breaker returns the circuit breaker in front of the connector's
// connections and statements, or nil when it is off (respool_breaker=off),
// for its state or to force it. With Stats and Pause, it makes a Connector
// a health.Guarded:
//
//	checker.Add(c.Name(), health.FromConnector(c, db.PingContext))
func (c *Connector) Breaker() *breaker.Breaker { return c.guard.Breaker() }

// Pause returns the pool-wide pause that holds connection attempts back
// while the server says "slow down", or nil when it is off
// (respool_pause=off), for its state or to force it.
func (c *Connector) Pause() *pause.Pause { return c.guard.Pause() }
