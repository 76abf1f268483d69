package health

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// Readiness says whether every source can serve a query now.
type Readiness struct {
	Ready bool // every source is ready (true without sources)
	Pools []PoolReadiness
}

// PoolReadiness is the readiness of one source, and why not.
type PoolReadiness struct {
	Name   string
	Ready  bool
	Reason string // why not ready (redacted); empty when ready
	// RetryAt is when the state that makes it not ready ends, when known
	// (an open breaker's half-open time, a pause's end).
	RetryAt time.Time
}

// Ready checks every source at once and returns when all are checked: a
// source is ready when its pool is not closed (Stats().Closed), its breaker
// is not open, its pause does not hold calls back, and its Probe returns nil
// within Config.ProbeTimeout (and ctx). A probe that fails makes only its
// own source not ready.
func (c *Checker) Ready(ctx context.Context) Readiness {
	names, srcs := c.sorted()
	r := Readiness{Ready: true, Pools: make([]PoolReadiness, len(names))}
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { r.Pools[i] = c.readiness(ctx, name, srcs[name]) })
	}
	wg.Wait()
	for _, p := range r.Pools {
		r.Ready = r.Ready && p.Ready
	}
	return r
}

func (c *Checker) readiness(ctx context.Context, name string, src Source) PoolReadiness {
	notReady := func(retryAt time.Time, format string, args ...any) PoolReadiness {
		return PoolReadiness{Name: name, Reason: c.redact(fmt.Sprintf(format, args...)), RetryAt: retryAt}
	}
	if src.Stats().Closed {
		return notReady(time.Time{}, "closed")
	}
	if src.Breaker != nil {
		if st := src.Breaker.Stats(); st.State == breaker.Open || st.State == breaker.ForcedOpen {
			return notReady(st.OpenUntil, "circuit breaker %s", st.State)
		}
	}
	if src.Pause != nil {
		if st := src.Pause.State(); st.Holding() {
			return notReady(st.Until, "paused: %v", st.Reason)
		}
	}
	if src.Probe != nil {
		pctx, cancel := context.WithTimeout(ctx, c.cfg.ProbeTimeout)
		defer cancel()
		if err := src.Probe(pctx); err != nil {
			retryAt, _ := resilience.RetryAfter(err)
			return notReady(retryAt, "probe failed (bound %v): %v", c.cfg.ProbeTimeout, err)
		}
	}
	return PoolReadiness{Name: name, Ready: true}
}
