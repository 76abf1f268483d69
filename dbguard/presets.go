package dbguard

import (
	"context"
	"errors"
	"time"

	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/retry"
)

// BreakerPreset is the circuit breaker of a database, which a zero field of
// Config.Breaker takes: a count window of the last 20 calls (connection
// attempts and statements), judged once it holds 10, opens the circuit
// when half of them failed at the connection level or timed out
// (Classification.IsFailure); a caller's own errors count as successes (the
// server answered), and its cancellations are not recorded (IsIgnored).
// One trial call goes through when the circuit half-opens, and one that has
// not ended within 1s (HalfOpenMaxWait: a frozen server, a long statement)
// opens it again.
//
// The circuit stays open 220ms (OpenDelay: Exponential from 220ms, ×2, Max
// 220ms, so constant until Max is raised). A database restart or failover
// is usually over in seconds, and callers are failed fast meanwhile, so the
// probe comes often: a restarted server is found within about a quarter of
// a second, at fewer than five connection attempts a second while it is
// down.
//
// SlowCallDuration is 0 (off): a workload of long queries would trip it (a
// frozen server is caught by its callers' deadlines, which count as
// failures when the statement ran at least twice the typical answered
// statement: see Guard.Exit).
func BreakerPreset() breaker.Config {
	return breaker.Config{
		WindowSize:      20,
		MinimumCalls:    10,
		FailureRate:     0.5,
		HalfOpenCalls:   1,
		HalfOpenMaxWait: time.Second,
		OpenDelay:       delay.Strategy{Kind: delay.Exponential, Initial: 220 * time.Millisecond, Multiplier: 2, Max: 220 * time.Millisecond},
		IsFailure:       func(err error) bool { return Classify(err).IsFailure() },
		IsIgnored:       func(err error) bool { return errors.Is(err, context.Canceled) },
	}
}

// RetryPreset is the retry of one connection creation, which a zero field
// of Config.Retry takes: 3 attempts, the first included, 50ms before the
// second, doubling up to 1s, drawn between half of it and all of it (Equal
// jitter), made again only when nothing reached the server
// (Classification.IsConnectRetryable: a refused or failed dial, pgx's
// connect errors) and it was not back-pressure (the pause and the pool
// handle that). The Guard also stops retrying once the circuit is no longer
// closed, and the attempts stay within the creation's deadline (the pool's
// CreateTimeout). MaxAttempts 1 turns retries off.
func RetryPreset() retry.Config[struct{}] {
	return retry.Config[struct{}]{
		MaxAttempts: 3,
		Delay: delay.Strategy{Kind: delay.Exponential, Initial: 50 * time.Millisecond, Multiplier: 2,
			Max: time.Second, Jitter: delay.Equal},
		RetryOn: func(err error) bool {
			v := Classify(err)
			return v.IsConnectRetryable() && v.Class != ClassBackPressure
		},
	}
}

// PausePreset is the pause after back-pressure, which a zero field of
// Config.Pause takes: a connection attempt's back-pressure error (the
// server is full, or starting: BackPressure) closes a gate in front of
// every creation for the time the error names, longer when it comes right
// back (escalation), capped at 30s (MaxPause: a pool above the server's
// limit tries again at least this often), and one probe goes first when it
// reopens. A creation that meets the closed gate fails at once (NoWait)
// with a rejection carrying the reopening time, so that the pool makes no
// attempt before then and serves its callers with the connections it has.
func PausePreset() pause.Config {
	return pause.Config{Classify: BackPressure, MaxPause: 30 * time.Second, NoWait: true}
}
