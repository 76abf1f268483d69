package health

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
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
// one. The name must not be empty and s.Stats must be set.
func (c *Checker) Add(name string, s Source) error {
	if name == "" {
		return errors.New("health: Add: empty name")
	}
	if s.Stats == nil {
		return ErrNoStats
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

// Named is a source and its name.
type Named struct {
	Name   string
	Source Source
}

// Sources returns the sources, sorted by name: for exporting them
// elsewhere (the metrics/prometheus module's Collector reads them).
func (c *Checker) Sources() []Named {
	c.mu.RLock()
	ns := make([]Named, 0, len(c.sources))
	for n, s := range c.sources {
		ns = append(ns, Named{n, s})
	}
	c.mu.RUnlock()
	slices.SortFunc(ns, func(a, b Named) int { return cmp.Compare(a.Name, b.Name) })
	return ns
}

// Format prints c, for every verb of package fmt, as its type and the
// names of its sources (*health.Checker["orders" "users"]): not its fields,
// which change while it is in use.
func (c *Checker) Format(f fmt.State, _ rune) {
	var names []string
	for _, n := range c.Sources() {
		names = append(names, n.Name)
	}
	_, _ = fmt.Fprintf(f, "%T%q", c, names)
}
