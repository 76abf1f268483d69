package health

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/respool/respool/internal/resil"
)

// Checker holds sources by name and reports their health. It is safe for
// concurrent use.
type Checker struct {
	cfg Config // with defaults; immutable

	mu      sync.RWMutex
	sources map[string]Source // guarded by mu
}

// New validates cfg and returns a Checker without sources.
func New(cfg Config) (*Checker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Checker{cfg: cfg, sources: map[string]Source{}}, nil
}

// Add adds s under name, replacing the source of that name if there is
// one. The name must not be empty and s.Stats must be set: without it, Add
// returns a *resilience.ConfigError on Field "Source.Stats".
func (c *Checker) Add(name string, s Source) error {
	if name == "" {
		return errors.New("health: Add: empty name")
	}
	if err := resil.Check(s.Stats != nil, "health", "Source.Stats", nil, "a func returning the pool's Stats"); err != nil {
		return err
	}
	c.mu.Lock()
	c.sources[name] = s
	c.mu.Unlock()
	return nil
}

// Remove removes the source named name, if any.
func (c *Checker) Remove(name string) {
	c.mu.Lock()
	delete(c.sources, name)
	c.mu.Unlock()
}

// Sources returns a copy of the sources by name: for exporting them
// elsewhere (the metrics/prometheus module's Collector reads them).
func (c *Checker) Sources() map[string]Source {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.sources)
}

// sorted returns a copy of the sources and their names, sorted.
func (c *Checker) sorted() ([]string, map[string]Source) {
	srcs := c.Sources()
	return slices.Sorted(maps.Keys(srcs)), srcs
}

// Format prints c, for every verb of package fmt, as its type and the
// names of its sources (*health.Checker["orders" "users"]): not its fields,
// which change while it is in use.
func (c *Checker) Format(f fmt.State, _ rune) {
	names, _ := c.sorted()
	_, _ = fmt.Fprintf(f, "%T%q", c, names)
}
