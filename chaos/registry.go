package chaos

import (
	"slices"
	"sync"
	"weak"
)

// registry holds the open Connectors that have a name, oldest first, weakly:
// a Connector nobody else holds is collected, closed or not (database/sql
// closes the Connectors it opens only in DB.Close).
var registry struct {
	mu   sync.Mutex
	open []weak.Pointer[Connector] // guarded by mu
}

func register(c *Connector) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.open = slices.DeleteFunc(registry.open, func(p weak.Pointer[Connector]) bool { return p.Value() == nil })
	registry.open = append(registry.open, weak.Make(c))
}

func unregister(c *Connector) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	registry.open = slices.DeleteFunc(registry.open, func(p weak.Pointer[Connector]) bool {
		v := p.Value()
		return v == nil || v == c
	})
}

// Lookup returns the newest open Connector named name (Config.Name,
// chaos_name), or nil. It is how a test reaches, for Stats, Enable and
// Disable, a Connector that database/sql made from a DSN, such as the one
// respool's driver wraps with respool_driver=chaos:
//
//	db, _ := sql.Open("respool", dsn+"&respool_driver=chaos&chaos_name=orders&chaos_error=40001&chaos_error_off=true")
//	c := chaos.Lookup("orders")
//	c.Enable("error")
func Lookup(name string) *Connector {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for i := len(registry.open) - 1; i >= 0; i-- {
		if c := registry.open[i].Value(); c != nil && c.name == name {
			return c
		}
	}
	return nil
}
