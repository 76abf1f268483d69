package respool

import (
	"database/sql"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/delay"
)

// dsnguardDefaultWindow is the breaker window respool_breaker_min_calls is
// checked against when respool_breaker_window is not given.
var dsnguardDefaultWindow = dbguard.BreakerPreset().WindowSize

// The pool's defaults that the checks of respool_min_idle and
// respool_create_backoff_max name when the key they are checked against is
// not given: those of a zero pool.Config's MaxObjects and BackoffInitial,
// as pool.Config states them (TestDSNPoolDefaultsAreThePools checks them
// against a pool's Config).
const dsnPoolBackoffInitial = 50 * time.Millisecond

func dsnPoolMaxObjects() int { return max(4, runtime.NumCPU()) }

// respool's keys, and the settings the keys give. respool's keys all start
// with "respool_" and are removed before the DSN reaches the underlying
// driver: pgx would send an unknown key to the server as a run-time
// parameter, go-sql-driver/mysql as a system variable. Every other parameter
// keeps its bytes and its place (order, percent-encoding, quoting); only the
// separators of the removed keys go, and a '?' left with an empty query.
//
// The keys and the fields they set (the README has types, defaults and
// meanings); a key that is absent leaves its field at the zero value, which
// pool.Config and dbguard.Config document as the default:
//
//	respool_driver                  DriverName
//	respool_name                    Pool.Name                  no control characters
//	respool_max_conns               Pool.MaxObjects            integer ≥ 1
//	respool_min_idle                Pool.MinIdle               integer ≥ 0, ≤ max_conns
//	respool_max_idle_time           Pool.MaxIdle               duration > 0, or off (-1)
//	respool_max_lifetime            Pool.MaxLifetime           duration > 0, or off (0)
//	respool_max_lifetime_jitter     Pool.MaxLifetimeJitter     duration > 0, or off (0)
//	respool_max_queue               Pool.MaxQueueSize          integer ≥ 1
//	respool_acquire_timeout         Pool.AcquireTimeout        duration > 0, or off (0)
//	respool_max_concurrent_creates  Pool.MaxConcurrentCreates  integer ≥ 1
//	respool_create_timeout          Pool.CreateTimeout         duration > 0
//	respool_test_timeout            Pool.TestTimeout           duration > 0
//	respool_validation_interval     Pool.ValidationInterval    duration > 0
//	respool_close_timeout           CloseTimeout               duration > 0, or off (0)
//	respool_cancel_wait             CancelWait                 duration > 0, or off (-1)
//	respool_session_end_wait        SessionEndWait             duration > 0, or off (-1)
//	respool_test_query              TestQuery                  string
//	respool_init_sql                InitSQL                    SQL statement; once per statement
//	respool_pgbouncer               PgBouncer                  off, session or transaction
//	respool_leak_detection          !Pool.LeakTrackingDisabled        true/false/on/off/1/0
//	respool_leak_stack              Pool.LeakCaptureStack             true/false/on/off/1/0
//	respool_leak_threshold          Pool.HoldThreshold                duration > 0, or off (-1)
//	respool_create_backoff          Pool.BackoffInitial               duration > 0, or off (Pool.BackoffDisabled)
//	respool_create_backoff_max      Pool.BackoffMax                   duration > 0, ≥ create_backoff
//	respool_overload                Pool.Overload                     deadline, codel or fifo
//	respool_back_pressure           !BackPressureDisabled                    true/false/on/off/1/0
//	respool_breaker                 !Resilience.BreakerDisabled              true/false/on/off/1/0
//	respool_breaker_window          Resilience.Breaker.WindowSize            integer ≥ 1
//	respool_breaker_min_calls       Resilience.Breaker.MinimumCalls          integer ≥ 1, ≤ breaker_window
//	respool_breaker_failure_rate    Resilience.Breaker.FailureRate           number in (0, 1]
//	respool_breaker_open_delay      Resilience.Breaker.OpenDelay.Initial     duration > 0
//	respool_breaker_max_open_delay  Resilience.Breaker.OpenDelay.Max         duration > 0
//	respool_breaker_slow_call       Resilience.Breaker.SlowCallDuration      duration > 0, or off (0)
//	respool_retry_connect           Resilience.Retry.MaxAttempts             integer ≥ 1, or off (1)
//	respool_connect_rate            Resilience.ConnectRate                   integer ≥ 1, or off (0)
//	respool_pause                   !Resilience.PauseDisabled                true/false/on/off/1/0
//	respool_max_pause               Resilience.Pause.MaxPause                duration > 0
//	respool_log                     LogLevel                                 off, error, warn, info or debug
//	respool_budget                  SharedBudget                             a URL of a registered scheme (RegisterBudget)
//
// The two open-delay keys set one delay.Strategy: the first of them copies
// dbguard.BreakerPreset's OpenDelay (exponential from 220ms, doubling, Max
// 220ms) into the zero Strategy, then each sets its part, and Max is raised
// to at least Initial: respool_breaker_open_delay=1s alone is a constant 1s,
// respool_breaker_max_open_delay=30s alone doubles from 220ms up to 30s.
//
// Durations are read by time.ParseDuration ("30s", "5m"). A setting that
// can be turned off is turned off by "off" (any case); the older spellings
// "none" and 0 (any zero duration) do the same, but for
// respool_retry_connect, whose off is one attempt.
//
// ParseDSN reads three forms, told apart by their first bytes; the form also
// chooses the underlying driver unless respool_driver names another:
//
//   - URL: the DSN starts with "postgres://" or "postgresql://"; driver
//     "pgx". The query is found as libpq and pgx find it: a '@' before any
//     '/' ends the user information (which may hold '?'), then come the
//     hosts, then the first '?' starts the query. The query is split on '&';
//     keys and values are percent-decoded, and a '+' stays a '+'.
//   - keyword/value: after leading whitespace the DSN is empty or starts with
//     a keyword (letters, digits, '_', '.', '-') and '=' (spaces around '='
//     allowed), as in "host=localhost dbname=app"; driver "pgx". It is split
//     into keyword=value elements with libpq's rules: a value is a run of
//     non-space bytes or single-quoted, and a backslash makes the next byte
//     literal. A removed element takes one whitespace byte after it with it
//     (the elements that end the DSN: the whitespace before them); a DSN
//     left with whitespace only becomes empty.
//   - mysql: anything else, read as go-sql-driver/mysql reads
//     [user[:password]@][net[(addr)]]/dbname[?param1=value1&...]; driver
//     "mysql". The query starts at the first '?' after the last '/', or at
//     the first '?' when there is no '/' (which suits other drivers' DSNs
//     such as SQLite's "file:app.db?mode=ro"). It is split on '&' and values
//     are decoded as URL query values (a '+' is a space).
//
// respool_driver=NAME changes the driver, not the form; it accepts "pgx",
// "mysql" and any other driver registered (sql.Register) when ParseDSN is
// called, but not "respool". A driver whose DSN fits none of the forms is
// configured in code with Config.
//
// Every error matches errors.Is(err, ErrInvalidConfig); a bad key or value is a
// *DSNError naming the key, its value and what is accepted, and suggesting
// the closest key for an unknown one. pgxpool's keys (pool_max_conns,
// pool_min_conns, pool_max_conn_lifetime, ...) are refused too, naming the
// respool key to use: the driver would pass them on to the server, which
// refuses them at the first connection. A key given twice is an error, but
// respool_init_sql, which is given once per statement. A password that the
// DSN's form cannot carry as written is an error that says how to encode
// it: in a URL, a password (or user) holding an unencoded '@' or '/' (pgx
// would read part of it as a host and show it), or one, or a password
// query value, holding a space or a '%' that does not start two hex
// digits, a password query value holding '=' or '&'; in the keyword/value
// form, an unquoted password holding a space. Errors never hold the DSN or
// its password.
func ParseDSN(dsn string) (*Config, error) {
	c, _, err := parseDSN(dsn)
	return c, err
}

// parseDSN is ParseDSN. It also returns the DSN as read (dsnform.Read: the
// rest for the driver and its secrets), for the Connector, which need not
// read it again.
func parseDSN(dsn string) (*Config, *dsnform.Text, error) {
	text, err := dsnform.Read(dsn, dsnKeyPrefix)
	if err != nil {
		return nil, nil, &dsnStructureError{err}
	}
	c := &Config{DriverName: text.Form.Driver(), DSN: text.Rest}
	given := make(map[string]*dsnform.Param, len(text.Params)) // by canonical key
	var minIdle, driverKey *dsnform.Param
	for i := range text.Params {
		p := &text.Params[i]
		k := dsnLookupKey(p.Key)
		if k == nil {
			return nil, nil, &DSNError{Key: p.Key, Suggestion: dsnSuggest(p.Key)}
		}
		value := p.Value // as an error may show it
		if k.secret {
			value = dsnform.RedactText(value)
		}
		if given[k.name] != nil && k.kind != dsnStrings {
			return nil, nil, &DSNError{Key: p.Key, Value: value, Duplicate: true}
		}
		given[k.name] = p
		if !p.ValueOK {
			return nil, nil, &DSNError{Key: p.Key, Value: value, Accepted: k.accepted + ", percent-encoded"}
		}
		if !k.parse(c, p.Value) {
			return nil, nil, &DSNError{Key: p.Key, Value: p.Value, Accepted: k.accepted}
		}
		switch k.name {
		case dsnKeyMinIdle:
			minIdle = p
		case dsnKeyDriver:
			driverKey = p
		}
	}
	if driverKey != nil && !dsnDriverKnown(c.DriverName) {
		return nil, nil, &DSNError{Key: driverKey.Key, Value: driverKey.Value,
			Accepted: "a registered database/sql driver: " + strings.Join(dsnKnownDrivers(), ", ")}
	}
	if minIdle != nil {
		limit, what := c.Pool.MaxObjects, "respool_max_conns"
		if limit == 0 {
			limit, what = dsnPoolMaxObjects(), "respool_max_conns, whose default on this machine is"
		}
		if c.Pool.MinIdle > limit {
			return nil, nil, &DSNError{Key: minIdle.Key, Value: minIdle.Value,
				Accepted: fmt.Sprintf("an integer ≥ 0 and ≤ %s %d", what, limit)}
		}
	}
	if err := dsnCheckPairs(c, given); err != nil {
		return nil, nil, err
	}
	if text, err = c.validate(text); err != nil {
		return nil, nil, err
	}
	return c, text, nil
}

// dsnCheckPairs checks the keys whose values bound one another, naming the
// key at fault: respool_breaker_min_calls at most respool_breaker_window,
// respool_create_backoff_max at least respool_create_backoff (either given
// or at its default); respool_pgbouncer for a pgx DSN only, and not with
// respool_init_sql in transaction mode.
func dsnCheckPairs(c *Config, given map[string]*dsnform.Param) error {
	if p := given[dsnKeyPgBouncer]; p != nil && c.PgBouncer != "" && c.DriverName != "pgx" && c.DriverName != "pgx/v5" {
		return &DSNError{Key: p.Key, Value: p.Value,
			Accepted: fmt.Sprintf("off with driver %q: PgBouncer is a pooler for PostgreSQL, through driver \"pgx\"", c.DriverName)}
	}
	if p := given[dsnKeyInitSQL]; p != nil && c.PgBouncer == pgbouncerTransaction {
		return &DSNError{Key: p.Key, Value: p.Value,
			Accepted: "no init SQL with respool_pgbouncer=transaction: PgBouncer hands each transaction any server connection, so a session's settings do not hold and reach other clients (use ALTER ROLE ... SET, PgBouncer's connect_query, or SET LOCAL in each transaction)"}
	}
	if p := given[dsnKeyBreakerMinCalls]; p != nil {
		limit, what := c.Resilience.Breaker.WindowSize, dsnKeyBreakerWindow
		if limit == 0 {
			limit, what = dsnguardDefaultWindow, dsnKeyBreakerWindow+", whose default is"
		}
		if c.Resilience.Breaker.MinimumCalls > limit {
			return &DSNError{Key: p.Key, Value: p.Value, Accepted: fmt.Sprintf("an integer ≥ 1 and ≤ %s %d", what, limit)}
		}
	}
	if p := given[dsnKeyCreateBackoffMax]; p != nil {
		initial, what := c.Pool.BackoffInitial, dsnKeyCreateBackoff
		if initial == 0 {
			initial, what = dsnPoolBackoffInitial, dsnKeyCreateBackoff+", whose default is"
		}
		if c.Pool.BackoffMax < initial {
			return &DSNError{Key: p.Key, Value: p.Value, Accepted: fmt.Sprintf("a duration ≥ %s %v", what, initial)}
		}
	}
	return nil
}

// dsnDriverKnown reports whether name can make connections: "pgx" and
// "mysql" are taken as known (this package does not import them, so they may
// be registered later, by the program's imports), any other name must be
// registered.
func dsnDriverKnown(name string) bool {
	if name == driverName {
		return false
	}
	return name == "pgx" || name == "mysql" || slices.Contains(sql.Drivers(), name)
}

// dsnKnownDrivers lists, quoted and sorted, the drivers respool_driver
// accepts.
func dsnKnownDrivers() []string {
	names := append([]string{"mysql", "pgx"}, sql.Drivers()...)
	slices.Sort(names)
	names = slices.Compact(names)
	out := names[:0]
	for _, n := range names {
		if n != driverName {
			out = append(out, strconv.Quote(n))
		}
	}
	return out
}

const dsnKeyPrefix = "respool_"

// dsnKind is the type of a respool key's value.
type dsnKind uint8

const (
	dsnInt dsnKind = iota + 1
	dsnDuration
	dsnBool
	dsnString
	dsnStrings // a list: the key may be given more than once, each value appended
	dsnRate    // a float64 in (0, 1]
	dsnEnum    // a pool.OverloadPolicy by name
	dsnBackoff // dsnBackoffField: a duration for BackoffInitial, or "off" for BackoffDisabled
	dsnDelay   // a part of the breaker's delay.Strategy: Initial, or Max with delayMax
	dsnLevel   // a slog.Leveler: off, or a level as slog spells it
)

// dsnOff is how a key that can be turned off stores "off".
type dsnOff uint8

const (
	dsnOffNo   dsnOff = iota // the key cannot be turned off
	dsnOffZero               // stored as 0, the field's zero value, which is off
	dsnOffNeg                // stored as -1: the field's zero is a default, not off
	dsnOffOne                // stored as 1 (respool_retry_connect: one attempt, no retry)
)

// isOff reports whether v turns k's setting off: "off" or "none" in any
// case, or "0".
func (k *dsnKey) isOff(v string) bool {
	return k.off != dsnOffNo && (strings.EqualFold(v, "off") || strings.EqualFold(v, "none") || v == "0" && k.off != dsnOffOne)
}

// dsnBackoffField is what respool_create_backoff sets: a duration for
// Pool.BackoffInitial, or "off" for Pool.BackoffDisabled.
type dsnBackoffField struct {
	initial  *time.Duration
	disabled *bool
}

// dsnKey describes one respool key: how its value is read and written and
// which Config field holds it.
type dsnKey struct {
	name     string
	kind     dsnKind
	accepted string // for errors: what the key accepts
	min      int    // dsnInt: the smallest value accepted
	positive bool   // dsnDuration: zero is not accepted
	// off says that the key's setting can be turned off, and how that is
	// stored: "off" (any case) turns it off, and so do the older spellings
	// "none" and 0 (for a duration, any zero such as 0s; not for
	// dsnOffOne, whose 0 would be no attempt at all).
	off    dsnOff
	invert bool // dsnBool: the field holds the negation of the value
	// delayMax, for a dsnDelay, makes the key set the Strategy's Max
	// rather than its Initial.
	delayMax bool
	// secret says the value may hold a password (a URL's): it is redacted
	// in errors, logs and String, not in FormatDSN.
	secret bool
	// field returns a pointer to the Config field: *int, *time.Duration,
	// *bool, *string, *[]string, *float64, *pool.OverloadPolicy,
	// dsnBackoffField, *delay.Strategy or *slog.Leveler according to kind.
	field func(c *Config) any
}

const (
	dsnKeyDriver  = "respool_driver"
	dsnKeyName    = "respool_name"
	dsnKeyMinIdle = "respool_min_idle"
	dsnKeyInitSQL = "respool_init_sql"
	dsnKeyBudget  = "respool_budget"
	// dsnKeyPgBouncer's value is read in any case, and off is stored as
	// "" (see Config.PgBouncer).
	dsnKeyPgBouncer = "respool_pgbouncer"
)

// dsnKeys lists every respool key in canonical order, the order in which
// FormatDSN writes them.
var dsnKeys = []dsnKey{
	{name: dsnKeyDriver, kind: dsnString,
		accepted: `a registered database/sql driver name other than "respool"`,
		field:    func(c *Config) any { return &c.DriverName }},
	{name: dsnKeyName, kind: dsnString,
		accepted: "a name without control characters (empty: the default, respool(DRIVER))",
		field:    func(c *Config) any { return &c.Pool.Name }},
	{name: "respool_max_conns", kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Pool.MaxObjects }},
	{name: dsnKeyMinIdle, kind: dsnInt, min: 0, accepted: "an integer ≥ 0",
		field: func(c *Config) any { return &c.Pool.MinIdle }},
	{name: "respool_max_idle_time", kind: dsnDuration, positive: true, off: dsnOffNeg,
		accepted: `a duration > 0 such as 5m, or "off" for no limit`,
		field:    func(c *Config) any { return &c.Pool.MaxIdle }},
	{name: "respool_max_lifetime", kind: dsnDuration, off: dsnOffZero,
		accepted: `a duration > 0 such as 1h, or "off" (0) for no limit`,
		field:    func(c *Config) any { return &c.Pool.MaxLifetime }},
	{name: "respool_max_lifetime_jitter", kind: dsnDuration, off: dsnOffZero,
		accepted: `a duration > 0 such as 5m, or "off" (0)`,
		field:    func(c *Config) any { return &c.Pool.MaxLifetimeJitter }},
	{name: "respool_max_queue", kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Pool.MaxQueueSize }},
	{name: "respool_acquire_timeout", kind: dsnDuration, off: dsnOffZero,
		accepted: `a duration > 0 such as 2s, or "off" (0): no bound but the caller's context`,
		field:    func(c *Config) any { return &c.Pool.AcquireTimeout }},
	{name: "respool_max_concurrent_creates", kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Pool.MaxConcurrentCreates }},
	{name: "respool_create_timeout", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 10s",
		field:    func(c *Config) any { return &c.Pool.CreateTimeout }},
	{name: "respool_test_timeout", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 5s",
		field:    func(c *Config) any { return &c.Pool.TestTimeout }},
	{name: "respool_validation_interval", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 30s",
		field:    func(c *Config) any { return &c.Pool.ValidationInterval }},
	{name: "respool_close_timeout", kind: dsnDuration, off: dsnOffZero,
		accepted: `a duration > 0 such as 30s, or "off" (0): Close does not wait`,
		field:    func(c *Config) any { return &c.CloseTimeout }},
	{name: "respool_cancel_wait", kind: dsnDuration, positive: true, off: dsnOffNeg,
		accepted: `a duration > 0 such as 500ms, or "off" (pgx closes the connection at once)`,
		field:    func(c *Config) any { return &c.CancelWait }},
	{name: "respool_session_end_wait", kind: dsnDuration, positive: true, off: dsnOffNeg,
		accepted: `a duration > 0 such as 5s, or "off" (the slot is freed when the driver's Close returns)`,
		field:    func(c *Config) any { return &c.SessionEndWait }},
	{name: "respool_test_query", kind: dsnString, accepted: "a string",
		field: func(c *Config) any { return &c.TestQuery }},
	{name: dsnKeyInitSQL, kind: dsnStrings,
		accepted: "one SQL statement, not empty (give the key once per statement)",
		field:    func(c *Config) any { return &c.InitSQL }},
	{name: dsnKeyPgBouncer, kind: dsnString, accepted: pgbouncerAccepted,
		field: func(c *Config) any { return &c.PgBouncer }},
	{name: "respool_leak_detection", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Pool.LeakTrackingDisabled }},
	{name: "respool_leak_stack", kind: dsnBool,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Pool.LeakCaptureStack }},
	{name: "respool_leak_threshold", kind: dsnDuration, positive: true, off: dsnOffNeg,
		accepted: `a duration > 0 such as 1m, or "off" for no hold-time report`,
		field:    func(c *Config) any { return &c.Pool.HoldThreshold }},
	{name: dsnKeyCreateBackoff, kind: dsnBackoff, off: dsnOffZero,
		accepted: `a duration > 0 such as 50ms, or "off" for no backoff`,
		field:    func(c *Config) any { return dsnBackoffField{&c.Pool.BackoffInitial, &c.Pool.BackoffDisabled} }},
	{name: dsnKeyCreateBackoffMax, kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 1s, at least respool_create_backoff",
		field:    func(c *Config) any { return &c.Pool.BackoffMax }},
	{name: "respool_overload", kind: dsnEnum, accepted: "deadline, codel or fifo",
		field: func(c *Config) any { return &c.Pool.Overload }},
	{name: "respool_back_pressure", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.BackPressureDisabled }},
	{name: "respool_breaker", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Resilience.BreakerDisabled }},
	{name: dsnKeyBreakerWindow, kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Resilience.Breaker.WindowSize }},
	{name: dsnKeyBreakerMinCalls, kind: dsnInt, min: 1, accepted: "an integer ≥ 1, at most respool_breaker_window",
		field: func(c *Config) any { return &c.Resilience.Breaker.MinimumCalls }},
	{name: "respool_breaker_failure_rate", kind: dsnRate, accepted: "a number > 0 and ≤ 1 such as 0.5",
		field: func(c *Config) any { return &c.Resilience.Breaker.FailureRate }},
	{name: "respool_breaker_open_delay", kind: dsnDelay,
		accepted: "a duration > 0 such as 220ms",
		field:    func(c *Config) any { return &c.Resilience.Breaker.OpenDelay }},
	{name: "respool_breaker_max_open_delay", kind: dsnDelay, delayMax: true,
		accepted: "a duration > 0 such as 5s",
		field:    func(c *Config) any { return &c.Resilience.Breaker.OpenDelay }},
	{name: "respool_breaker_slow_call", kind: dsnDuration, positive: true, off: dsnOffZero,
		accepted: `a duration > 0 such as 5s, or "off"`,
		field:    func(c *Config) any { return &c.Resilience.Breaker.SlowCallDuration }},
	{name: "respool_retry_connect", kind: dsnInt, min: 1, off: dsnOffOne,
		accepted: `an integer ≥ 1 (1: no retry), or "off" (1)`,
		field:    func(c *Config) any { return &c.Resilience.Retry.MaxAttempts }},
	{name: "respool_connect_rate", kind: dsnInt, min: 1, off: dsnOffZero,
		accepted: `an integer ≥ 1 (attempts a second), or "off"`,
		field:    func(c *Config) any { return &c.Resilience.ConnectRate }},
	{name: "respool_pause", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Resilience.PauseDisabled }},
	{name: "respool_max_pause", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 30s",
		field:    func(c *Config) any { return &c.Resilience.Pause.MaxPause }},
	{name: "respool_log", kind: dsnLevel, accepted: "off, error, warn, info or debug",
		field: func(c *Config) any { return &c.LogLevel }},
	{name: dsnKeyBudget, kind: dsnString, secret: true,
		accepted: "a budget shared with other processes, such as redis://host:6379/0?name=orders&max=200",
		field:    func(c *Config) any { return &c.SharedBudget }},
}

const (
	dsnKeyCreateBackoff    = "respool_create_backoff"
	dsnKeyCreateBackoffMax = "respool_create_backoff_max"
	dsnKeyBreakerWindow    = "respool_breaker_window"
	dsnKeyBreakerMinCalls  = "respool_breaker_min_calls"
)

// dsnKeyNames returns the valid keys in canonical order.
func dsnKeyNames() []string {
	names := make([]string, len(dsnKeys))
	for i, k := range dsnKeys {
		names[i] = k.name
	}
	return names
}

func dsnLookupKey(name string) *dsnKey {
	for i := range dsnKeys {
		if dsnKeys[i].name == name {
			return &dsnKeys[i]
		}
	}
	return nil
}

// parse stores v in c's field; it reports false when v is not accepted.
func (k *dsnKey) parse(c *Config, v string) bool {
	switch p := k.field(c).(type) {
	case *int:
		if k.isOff(v) {
			*p = 0
			if k.off == dsnOffOne {
				*p = 1
			}
			return true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < k.min {
			return false
		}
		*p = n
	case *float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return false
		}
		*p = f
	case *pool.OverloadPolicy:
		for _, o := range []pool.OverloadPolicy{pool.OverloadDeadline, pool.OverloadCoDel, pool.OverloadFIFO} {
			if strings.EqualFold(v, o.String()) {
				*p = o
				return true
			}
		}
		return false
	case *slog.Leveler:
		level, ok := parseLevel(v)
		if !ok {
			return false
		}
		*p = level
	case *delay.Strategy:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return false
		}
		if p.Kind == delay.Default {
			*p = dbguard.BreakerPreset().OpenDelay
		}
		if k.delayMax {
			p.Max = d
		} else {
			p.Initial = d
		}
		p.Max = max(p.Max, p.Initial)
	case dsnBackoffField:
		d, err := time.ParseDuration(v)
		if k.isOff(v) || err == nil && d == 0 {
			*p.disabled = true
			return true
		}
		if err != nil || d < 0 {
			return false
		}
		*p.initial = d
	case *time.Duration:
		d, err := time.ParseDuration(v)
		if k.isOff(v) || err == nil && d == 0 && k.off != dsnOffNo {
			*p = 0
			if k.off == dsnOffNeg {
				*p = -1
			}
			return true
		}
		if err != nil || d < 0 || d == 0 && k.positive {
			return false
		}
		*p = d
	case *bool:
		b, ok := dsnform.ParseBool(v)
		if !ok {
			return false
		}
		*p = b != k.invert
	case *string:
		switch {
		case k.name == dsnKeyDriver && (v == "" || v == driverName):
			return false
		case k.name == dsnKeyName && strings.IndexFunc(v, unicode.IsControl) >= 0:
			return false
		case k.name == dsnKeyPgBouncer:
			switch v = strings.ToLower(v); v {
			case "off":
				v = ""
			case pgbouncerSession, pgbouncerTransaction:
			default:
				return false
			}
		}
		*p = v
	case *[]string:
		if strings.TrimSpace(v) == "" {
			return false
		}
		*p = append(*p, v)
	}
	return true
}

// formatAll returns the values FormatDSN writes for c's field, one pair
// each: none when the field has its zero value.
func (k *dsnKey) formatAll(c *Config) []string {
	if p, ok := k.field(c).(*[]string); ok {
		return *p
	}
	if v := k.format(c); v != "" {
		return []string{v}
	}
	return nil
}

// format returns the value FormatDSN writes for c's field, or "" when the
// field has its zero value. A list is formatted by formatAll.
func (k *dsnKey) format(c *Config) string {
	switch p := k.field(c).(type) {
	case *int:
		if *p != 0 {
			return strconv.Itoa(*p)
		}
	case *float64:
		if *p != 0 {
			return strconv.FormatFloat(*p, 'g', -1, 64)
		}
	case *pool.OverloadPolicy:
		if *p != 0 {
			return p.String()
		}
	case *slog.Leveler:
		if *p != nil {
			return levelName((*p).Level())
		}
	case *delay.Strategy:
		// Initial whenever the Strategy is set, so that it reads back as
		// set; Max when it is not what Initial alone gives.
		switch {
		case p.Kind == delay.Default:
		case !k.delayMax:
			return p.Initial.String()
		case p.Max != max(dbguard.BreakerPreset().OpenDelay.Max, p.Initial):
			return p.Max.String()
		}
	case dsnBackoffField:
		switch {
		case *p.disabled:
			return "off"
		case *p.initial != 0:
			return p.initial.String()
		}
	case *time.Duration:
		switch {
		case *p < 0 && k.off == dsnOffNeg:
			return "off"
		case *p != 0:
			return p.String()
		}
	case *bool:
		if *p {
			return strconv.FormatBool(!k.invert)
		}
	case *string:
		return *p
	}
	return ""
}

// logValue is format as a typed slog value; ok is false for a zero field.
func (k *dsnKey) logValue(c *Config) (v slog.Value, ok bool) {
	switch p := k.field(c).(type) {
	case *int:
		return slog.IntValue(*p), *p != 0
	case *time.Duration:
		if *p < 0 && k.off == dsnOffNeg {
			return slog.StringValue("off"), true
		}
		return slog.DurationValue(*p), *p != 0
	case *bool:
		return slog.BoolValue(*p != k.invert), *p
	case *string:
		if k.secret {
			return slog.StringValue(dsnform.RedactText(*p)), *p != ""
		}
		return slog.StringValue(*p), *p != ""
	case *[]string:
		return slog.AnyValue(*p), len(*p) > 0
	case *float64:
		return slog.Float64Value(*p), *p != 0
	}
	if v := k.format(c); v != "" {
		return slog.StringValue(v), true
	}
	return slog.Value{}, false
}
