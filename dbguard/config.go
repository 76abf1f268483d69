package dbguard

import (
	"cmp"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/dbclass"
)

// Defaults of the zero Config, chosen for a database: see Config.
const (
	// DefaultWindowSize is the breaker's window: the last 20 calls
	// (connection attempts and statements).
	DefaultWindowSize = 20
	// DefaultMinimumCalls is how many calls the window holds before the
	// breaker judges its failure rate.
	DefaultMinimumCalls = 10
	// DefaultFailureRate opens the circuit when half of the window's calls
	// failed at the connection level or timed out.
	DefaultFailureRate = 0.5
	// DefaultOpenDelay is how long the circuit stays open before one probe
	// is let through. A database restart or failover is usually over in
	// seconds, and callers are failed fast meanwhile, so the probe comes
	// often: a restarted server is found within about a quarter of a second,
	// at fewer than five connection attempts a second while it is down.
	DefaultOpenDelay = 220 * time.Millisecond
	// DefaultHalfOpenMaxWait bounds the probe: a probe that has not ended
	// by then (a frozen server, a long statement) opens the circuit again,
	// and the next probe comes an open delay later.
	DefaultHalfOpenMaxWait = time.Second
	// DefaultConnectAttempts is how many attempts one creation makes when
	// nothing reached the server.
	DefaultConnectAttempts = 3
	// DefaultRetryDelay is the delay before the second attempt (doubling,
	// jittered, capped by DefaultRetryMaxDelay).
	DefaultRetryDelay    = 50 * time.Millisecond
	DefaultRetryMaxDelay = time.Second
	// DefaultMaxPause caps the pause after back-pressure, however often the
	// server repeats it: a pool above the server's limit tries again at
	// least this often.
	DefaultMaxPause = 30 * time.Second
)

// Config configures a Guard. The zero value of every field is the default
// written beside it; every mechanism can be turned off.
type Config struct {
	// Name names the mechanisms in events and errors.
	Name string
	// Breaker configures the circuit breaker of connection attempts and
	// statements. On by default.
	Breaker BreakerConfig
	// Retry configures the attempts of one connection creation. On by
	// default (3 attempts).
	Retry RetryConfig
	// Pause configures the pool-wide pause after back-pressure. On by
	// default.
	Pause PauseConfig
	// ConnectRate limits connection attempts to this many a second (a
	// token bucket holding one second's worth; attempts beyond it wait, up
	// to the creation's deadline). Zero, the default, means no limit: the
	// pool's creation backoff and the breaker already bound the attempts
	// made to a failing server, and a limit that bites a healthy one only
	// makes callers wait. Set it where many processes share a server and
	// reconnect together.
	ConnectRate int
	// BackPressureDisabled makes BackPressure return nil, so that a pool
	// configured from the Guard does not know the server's "too many
	// connections" (see Guard.BackPressure).
	BackPressureDisabled bool
	// Classifier says what an error means (see package dbclass); nil means
	// dbclass's defaults.
	Classifier *dbclass.Classifier
	// Clock is where time is read and timers set. Nil means clock.System().
	Clock clock.Clock
	// Listener receives the mechanisms' events (see resilience.Event).
	Listener resilience.Listener
}

// BreakerConfig configures the circuit breaker: a count window of the last
// calls (connection attempts and statements), of which those that failed at
// the connection level or timed out (dbclass.Classification.IsFailure)
// count as failures; a caller's own errors and cancellations, back-pressure
// and transaction conflicts do not.
type BreakerConfig struct {
	// Disabled turns the breaker off: nothing is rejected, nothing recorded.
	Disabled bool
	// WindowSize is the window, in calls. Zero means DefaultWindowSize (20).
	WindowSize int
	// MinimumCalls is how many calls the window must hold before its rate
	// is judged; at most WindowSize. Zero means DefaultMinimumCalls (10),
	// or WindowSize when that is smaller.
	MinimumCalls int
	// FailureRate, in (0, 1], opens the circuit. Zero means
	// DefaultFailureRate (0.5).
	FailureRate float64
	// OpenDelay is how long the circuit stays open before a probe. Zero
	// means DefaultOpenDelay (220ms).
	OpenDelay time.Duration
	// MaxOpenDelay, when longer than OpenDelay, makes the open delay double
	// with each failed probe in a row, up to it. Zero means OpenDelay: a
	// constant delay.
	MaxOpenDelay time.Duration
	// SlowCall, when positive, counts calls slower than it as slow, and
	// opens the circuit when every call of the window was slow: a server
	// that stalls without failing. Zero, the default, means off: a workload
	// of long queries would trip it (a frozen server is caught by its
	// callers' deadlines, which count as failures when the statement ran
	// at least twice the typical answered statement: see Guard.Exit).
	// When on, every timeout counts.
	SlowCall time.Duration
}

// RetryConfig configures the attempts of one creation. An attempt is made
// again only when nothing reached the server (dbclass.IsConnectRetryable:
// a refused or failed dial, pgx's connect errors), never after
// back-pressure (the pause and the pool handle it), and never once the
// circuit is open; the attempts stay within the creation's deadline (the
// pool's CreateTimeout).
type RetryConfig struct {
	// Attempts is the most attempts one creation makes, the first
	// included; 1 turns retries off. Zero means DefaultConnectAttempts (3).
	Attempts int
	// Delay is the delay before the second attempt, doubled after each,
	// drawn between half of it and all of it. Zero means DefaultRetryDelay
	// (50ms).
	Delay time.Duration
	// MaxDelay caps the delay. Zero means DefaultRetryMaxDelay (1s), or
	// Delay when that is longer.
	MaxDelay time.Duration
}

// PauseConfig configures the pause: a back-pressure error of a connection
// attempt (the server is full, or starting: dbclass.BackPressure) closes a
// gate in front of every creation for the time the error names, longer
// when it comes right back (escalation), and one probe goes first when it
// reopens. A creation that meets the closed gate fails at once with a
// rejection carrying the reopening time, so that the pool makes no attempt
// before then.
type PauseConfig struct {
	// Disabled turns the pause off.
	Disabled bool
	// MaxPause caps a pause, escalated or not. Zero means DefaultMaxPause
	// (30s).
	MaxPause time.Duration
}

const mechanism = "dbguard"

// Validate reports the first field of c that is not accepted, as a
// *resilience.ConfigError naming it; New reports the same.
func (c Config) Validate() error {
	_, err := c.validate()
	return err
}

// validate checks c and returns it with the defaults filled in.
func (c Config) validate() (Config, error) {
	b, r, p := &c.Breaker, &c.Retry, &c.Pause
	checks := []error{
		resil.Check(b.WindowSize >= 0, mechanism, "Breaker.WindowSize", b.WindowSize, "a count >= 0 (0: 20)"),
		resil.Check(b.MinimumCalls >= 0, mechanism, "Breaker.MinimumCalls", b.MinimumCalls, "a count >= 0 (0: 10)"),
		resil.Check(b.FailureRate >= 0 && b.FailureRate <= 1, mechanism, "Breaker.FailureRate", b.FailureRate,
			"a rate in (0, 1] (0: 0.5)"),
		resil.Check(b.OpenDelay >= 0, mechanism, "Breaker.OpenDelay", b.OpenDelay, "a duration >= 0 (0: 220ms)"),
		resil.Check(b.MaxOpenDelay >= 0, mechanism, "Breaker.MaxOpenDelay", b.MaxOpenDelay,
			"a duration >= 0 (0: OpenDelay)"),
		resil.Check(b.SlowCall >= 0, mechanism, "Breaker.SlowCall", b.SlowCall, "a duration >= 0 (0: off)"),
		resil.Check(r.Attempts >= 0, mechanism, "Retry.Attempts", r.Attempts, "a count >= 0 (0: 3; 1: no retry)"),
		resil.Check(r.Delay >= 0, mechanism, "Retry.Delay", r.Delay, "a duration >= 0 (0: 50ms)"),
		resil.Check(r.MaxDelay >= 0, mechanism, "Retry.MaxDelay", r.MaxDelay, "a duration >= 0 (0: 1s)"),
		resil.Check(p.MaxPause >= 0, mechanism, "Pause.MaxPause", p.MaxPause, "a duration >= 0 (0: 30s)"),
		resil.Check(c.ConnectRate >= 0, mechanism, "ConnectRate", c.ConnectRate, "a rate >= 0 a second (0: no limit)"),
	}
	if err := resil.FirstError(checks...); err != nil {
		return c, err
	}
	b.WindowSize = cmp.Or(b.WindowSize, DefaultWindowSize)
	b.MinimumCalls = cmp.Or(b.MinimumCalls, min(DefaultMinimumCalls, b.WindowSize))
	if err := resil.Check(b.MinimumCalls <= b.WindowSize, mechanism, "Breaker.MinimumCalls", b.MinimumCalls,
		"at most Breaker.WindowSize"); err != nil {
		return c, err
	}
	b.FailureRate = cmp.Or(b.FailureRate, DefaultFailureRate)
	b.OpenDelay = cmp.Or(b.OpenDelay, DefaultOpenDelay)
	b.MaxOpenDelay = max(b.MaxOpenDelay, b.OpenDelay)
	r.Attempts = cmp.Or(r.Attempts, DefaultConnectAttempts)
	r.Delay = cmp.Or(r.Delay, DefaultRetryDelay)
	r.MaxDelay = max(cmp.Or(r.MaxDelay, DefaultRetryMaxDelay), r.Delay)
	p.MaxPause = cmp.Or(p.MaxPause, DefaultMaxPause)
	if c.Classifier == nil {
		c.Classifier, _ = dbclass.New(dbclass.Config{})
	}
	c.Clock = resil.ClockOr(c.Clock)
	return c, nil
}
