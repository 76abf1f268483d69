package respool

import (
	"slices"
	"sync"
)

// registry holds the open Connectors of the process, oldest first:
// NewConnector adds each, Connector.Close removes it. It holds the Connectors
// only (no DSN, no password: a Connector shows neither).
var registry struct {
	mu   sync.Mutex
	open []*Connector // guarded by mu
}

func register(c *Connector) {
	registry.mu.Lock()
	registry.open = append(registry.open, c)
	registry.mu.Unlock()
}

// unregister removes cs in one step: a reader of the registry sees all of
// them or none. Removing one again does nothing.
func unregister(cs ...*Connector) {
	registry.mu.Lock()
	registry.open = slices.DeleteFunc(registry.open, func(c *Connector) bool { return slices.Contains(cs, c) })
	registry.mu.Unlock()
}

// Connectors returns every open Connector of the process, oldest first: those
// made by NewConnector, OpenDB or sql.Open("respool", ...) (database/sql calls
// Driver.OpenConnector) and not yet closed (Connector.Close, which
// sql.DB.Close calls). Stats, health checks and metrics find every respool
// pool of the process through it.
func Connectors() []*Connector {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return slices.Clone(registry.open)
}

// Lookup returns the open Connector whose pool is named name, or nil when
// none is. A pool's name is respool_name, Config.Pool.Name, or by default
// "respool(DRIVER)" with DRIVER the driver's name (for example
// "respool(pgx)") or the Config.Connector's type.
//
// Names need not be unique: when several open Connectors share a name,
// Lookup returns the oldest of them (the first made of those not yet closed);
// Connectors lists them all.
func Lookup(name string) *Connector {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, c := range registry.open {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// Name returns the name of c's pool (see Lookup).
func (c *Connector) Name() string { return c.pool.Config().Name }
