package health

import (
	"time"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/ratelimit"
)

// Report is the health of every source of a Checker, by name.
type Report struct {
	Time  time.Time
	Pools []PoolReport // sorted by name
}

// PoolReport is the health of one source: its pool's gauges and counters
// (see pool.Stats for their meaning) and the state of the mechanisms
// guarding it. Error texts are redacted.
type PoolReport struct {
	Name   string
	Closed bool

	MaxObjects, EffectiveMaxObjects               int
	Total, Idle, InUse, Creating, Waiting, Queued int

	Takes, Waits, QueueFull, FailedFast, Overloaded uint64
	CancelledWaits, AcquireTimeouts                 uint64
	Creates, CreateFailures                         uint64
	Destroys                                        pool.DestroyCounts
	LeaksDetected, HeldTooLong                      uint64

	// AcquireWait are the quantiles of Config.Quantiles of how long Takes
	// waited, from the pool's histogram.
	AcquireWait []Quantile

	CreateFailuresInARow int
	LastCreateError      string // redacted; empty when none
	LastCreateErrorAt    time.Time
	NextCreateAttempt    time.Time // while creations are held back

	Breaker *breaker.Stats    // nil without a breaker
	Pause   *PauseState       // nil without a pause
	Limiter *ratelimit.Stats  // nil without a limiter
	Budget  *pool.BudgetStats // nil without a Budget shared with other processes (pool.Config.Budget) that reports itself
}

// Quantile is one acquire-wait quantile: Q of the Takes waited less than
// Wait, as the upper bound of the histogram bucket that holds it. AtLeast
// is true when it falls in the last, unbounded bucket: Wait is then that
// bucket's lower bound. Wait is 0 when no Take was counted.
type Quantile struct {
	Q       float64
	Wait    time.Duration
	AtLeast bool
}

// PauseState is a pause's gate (see pause.State), its reason redacted.
type PauseState struct {
	Holding   bool // calls are held back now
	Until     time.Time
	Reason    string // redacted; empty when open
	Waiting   int
	LastPause time.Duration
	Pauses    uint64
}

// Report returns the health of every source, sorted by name. It reads
// statistics only: it neither waits nor probes.
func (c *Checker) Report() Report {
	r := Report{Time: c.cfg.Clock.Now()}
	names, srcs := c.sorted()
	for _, name := range names {
		r.Pools = append(r.Pools, c.poolReport(name, srcs[name]))
	}
	return r
}

func (c *Checker) poolReport(name string, src Source) PoolReport {
	s := src.Stats()
	r := PoolReport{
		Name: name, Closed: s.Closed,
		MaxObjects: s.MaxObjects, EffectiveMaxObjects: s.EffectiveMaxObjects,
		Total: s.Total, Idle: s.Idle, InUse: s.InUse, Creating: s.Creating, Waiting: s.Waiting, Queued: s.Queued,
		Takes: s.Takes, Waits: s.Waits, QueueFull: s.QueueFull, FailedFast: s.FailedFast, Overloaded: s.Overloaded,
		CancelledWaits: s.CancelledWaits, AcquireTimeouts: s.AcquireTimeouts,
		Creates: s.Creates, CreateFailures: s.CreateFailures, Destroys: s.Destroys,
		LeaksDetected: s.LeaksDetected, HeldTooLong: s.HeldTooLong,
		CreateFailuresInARow: s.CreateFailuresInARow,
		LastCreateErrorAt:    s.LastCreateErrorAt, NextCreateAttempt: s.NextCreateAttempt,
		Budget: s.Budget,
	}
	for _, q := range c.cfg.Quantiles {
		d, ok := s.WaitHistogram.Quantile(q)
		r.AcquireWait = append(r.AcquireWait, Quantile{Q: q, Wait: d, AtLeast: !ok && d > 0})
	}
	if s.LastCreateError != nil {
		r.LastCreateError = c.redact(s.LastCreateError.Error())
	}
	if src.Breaker != nil {
		b := src.Breaker.Stats()
		r.Breaker = &b
	}
	if src.Pause != nil {
		st := src.Pause.State()
		r.Pause = &PauseState{Holding: st.Holding(), Until: st.Until, Waiting: st.Waiting, LastPause: st.LastPause, Pauses: st.Pauses}
		if st.Reason != nil {
			r.Pause.Reason = c.redact(st.Reason.Error())
		}
	}
	if src.Limiter != nil {
		l := src.Limiter.Stats()
		r.Limiter = &l
	}
	return r
}

// redact removes the passwords s may quote, as respool's driver and chaos
// define a secret (dsnform.RedactText), then applies Config.Redact.
func (c *Checker) redact(s string) string {
	s = dsnform.RedactText(s)
	if c.cfg.Redact != nil {
		s = c.cfg.Redact(s)
	}
	return s
}
