package dbguard

import (
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/ratelimit"
	"github.com/respool/respool/resilience/retry"
)

// Stats is a snapshot of a Guard. The fields of a mechanism that is off
// are zero, and its On field false.
type Stats struct {
	BreakerOn bool
	// Breaker is the breaker's state (Breaker.State: closed, open,
	// half_open), its window and its counters.
	Breaker breaker.Stats
	PauseOn bool
	// Pause is the pause's gate: Open, Until, Reason, Pauses.
	Pause         pause.State
	ConnectRateOn bool
	Limiter       ratelimit.Stats
	// Retry counts the connection attempts made again, and the creations
	// that gave up.
	Retry retry.Stats
	// ConnectAttempts counts connection attempts (each retry included);
	// ConnectFailures those that failed.
	ConnectAttempts, ConnectFailures uint64
	// StatementFailures counts statements recorded as failures: their
	// connection broke or they timed out.
	StatementFailures uint64
	// Rejected counts takes and statements refused by the breaker (Admit,
	// Enter); connection attempts it refused are in Breaker.Rejected.
	Rejected uint64
}

// Stats returns a snapshot.
func (g *Guard) Stats() Stats {
	s := Stats{Retry: g.retry.Stats(), ConnectAttempts: g.attempts.Load(), ConnectFailures: g.attemptFailures.Load(),
		StatementFailures: g.failures.Load(), Rejected: g.rejected.Load()}
	if g.breaker != nil {
		s.BreakerOn, s.Breaker = true, g.breaker.Stats()
	}
	if g.pause != nil {
		s.PauseOn, s.Pause = true, g.pause.State()
	}
	if g.limiter != nil {
		s.ConnectRateOn, s.Limiter = true, g.limiter.Stats()
	}
	return s
}
