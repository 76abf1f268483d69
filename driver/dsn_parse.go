package driver

import (
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
)

// dsnguardDefaultWindow is the breaker window respool_breaker_min_calls is
// checked against when respool_breaker_window is not given.
const dsnguardDefaultWindow = dbguard.DefaultWindowSize

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
//	respool_max_idle_time           Pool.MaxIdle               duration > 0, or none (-1)
//	respool_max_lifetime            Pool.MaxLifetime           duration ≥ 0
//	respool_max_lifetime_jitter     Pool.MaxLifetimeJitter     duration ≥ 0
//	respool_max_queue               Pool.MaxQueueSize          integer ≥ 1
//	respool_acquire_timeout         Pool.AcquireTimeout        duration ≥ 0
//	respool_max_concurrent_creates  Pool.MaxConcurrentCreates  integer ≥ 1
//	respool_create_timeout          Pool.CreateTimeout         duration > 0
//	respool_test_timeout            Pool.TestTimeout           duration > 0
//	respool_validation_interval     Pool.ValidationInterval    duration > 0
//	respool_close_timeout           CloseTimeout               duration ≥ 0
//	respool_cancel_wait             CancelWait                 duration > 0, or off (-1)
//	respool_session_end_wait        SessionEndWait             duration > 0, or off (-1)
//	respool_test_query              TestQuery                  string
//	respool_init_sql                InitSQL                    SQL statement; once per statement
//	respool_leak_detection          !Pool.Leak.Disabled        true/false/on/off/1/0
//	respool_leak_stack              Pool.Leak.CaptureStack     true/false/on/off/1/0
//	respool_leak_threshold          Pool.Leak.HoldThreshold    duration > 0, or off (-1)
//	respool_create_backoff          Pool.CreateBackoff         duration > 0 (Initial), or off (Disabled)
//	respool_create_backoff_max      Pool.CreateBackoff.Max     duration > 0, ≥ create_backoff
//	respool_overload                Pool.Overload.Policy       deadline, codel or fifo
//	respool_back_pressure           !Resilience.BackPressureDisabled  true/false/on/off/1/0
//	respool_breaker                 !Resilience.Breaker.Disabled      true/false/on/off/1/0
//	respool_breaker_window          Resilience.Breaker.WindowSize     integer ≥ 1
//	respool_breaker_min_calls       Resilience.Breaker.MinimumCalls   integer ≥ 1, ≤ breaker_window
//	respool_breaker_failure_rate    Resilience.Breaker.FailureRate    number in (0, 1]
//	respool_breaker_open_delay      Resilience.Breaker.OpenDelay      duration > 0
//	respool_breaker_max_open_delay  Resilience.Breaker.MaxOpenDelay   duration > 0
//	respool_breaker_slow_call       Resilience.Breaker.SlowCall       duration > 0, or off (0)
//	respool_retry_connect           Resilience.Retry.Attempts         integer ≥ 1
//	respool_connect_rate            Resilience.ConnectRate            integer ≥ 1, or off (0)
//	respool_pause                   !Resilience.Pause.Disabled        true/false/on/off/1/0
//	respool_max_pause               Resilience.Pause.MaxPause         duration > 0
//
// Durations are read by time.ParseDuration ("30s", "5m").
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
// Every error matches errors.Is(err, ErrInvalidDSN); a bad key or value is a
// *DSNError naming the key, its value and what is accepted, and suggesting
// the closest key for an unknown one. A key given twice is an error, but
// respool_init_sql, which is given once per statement. Errors never hold
// the DSN or its password.
func ParseDSN(dsn string) (*Config, error) {
	form := dsnform.Of(dsn)
	rest, params, err := dsnSplit(dsn, form)
	if err != nil {
		return nil, err
	}
	c := &Config{DriverName: form.Driver(), DSN: rest}
	given := make(map[string]*dsnParam, len(params)) // by canonical key
	var minIdle, driverKey *dsnParam
	for i := range params {
		p := &params[i]
		k := dsnLookupKey(p.key)
		if k == nil {
			return nil, &DSNError{Key: p.key, Suggestion: dsnSuggest(p.key)}
		}
		if given[k.name] != nil && k.kind != dsnStrings {
			return nil, &DSNError{Key: p.key, Value: p.value, Duplicate: true}
		}
		given[k.name] = p
		if !p.valueOK {
			return nil, &DSNError{Key: p.key, Value: p.value, Accepted: k.accepted + ", percent-encoded"}
		}
		if !k.parse(c, p.value) {
			return nil, &DSNError{Key: p.key, Value: p.value, Accepted: k.accepted}
		}
		switch k.name {
		case dsnKeyMinIdle:
			minIdle = p
		case dsnKeyDriver:
			driverKey = p
		}
	}
	if driverKey != nil && !dsnDriverKnown(c.DriverName) {
		return nil, &DSNError{Key: driverKey.key, Value: driverKey.value,
			Accepted: "a registered database/sql driver: " + strings.Join(dsnKnownDrivers(), ", ")}
	}
	if minIdle != nil {
		limit, what := c.Pool.MaxObjects, "respool_max_conns"
		if limit == 0 {
			limit, what = pool.DefaultMaxObjects(), "respool_max_conns, whose default on this machine is"
		}
		if c.Pool.MinIdle > limit {
			return nil, &DSNError{Key: minIdle.key, Value: minIdle.value,
				Accepted: fmt.Sprintf("an integer ≥ 0 and ≤ %s %d", what, limit)}
		}
	}
	if err := dsnCheckPairs(c, given); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidDSN, err)
	}
	return c, nil
}

// dsnCheckPairs checks the keys whose values bound one another, naming the
// key at fault: respool_breaker_min_calls at most respool_breaker_window,
// respool_create_backoff_max at least respool_create_backoff (either given
// or at its default).
func dsnCheckPairs(c *Config, given map[string]*dsnParam) error {
	if p := given[dsnKeyBreakerMinCalls]; p != nil {
		limit, what := c.Resilience.Breaker.WindowSize, dsnKeyBreakerWindow
		if limit == 0 {
			limit, what = dsnguardDefaultWindow, dsnKeyBreakerWindow+", whose default is"
		}
		if c.Resilience.Breaker.MinimumCalls > limit {
			return &DSNError{Key: p.key, Value: p.value, Accepted: fmt.Sprintf("an integer ≥ 1 and ≤ %s %d", what, limit)}
		}
	}
	if p := given[dsnKeyCreateBackoffMax]; p != nil {
		b := c.Pool.CreateBackoff
		initial, what := b.Initial, dsnKeyCreateBackoff
		if initial == 0 {
			initial, what = pool.DefaultBackoffInitial, dsnKeyCreateBackoff+", whose default is"
		}
		if b.Max < initial {
			return &DSNError{Key: p.key, Value: p.value, Accepted: fmt.Sprintf("a duration ≥ %s %v", what, initial)}
		}
	}
	return nil
}

// dsnDriverKnown reports whether name can make connections: "pgx" and
// "mysql" are taken as known (this package does not import them, so they may
// be registered later, by the program's imports), any other name must be
// registered.
func dsnDriverKnown(name string) bool {
	if name == dsnSelfDriver {
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
		if n != dsnSelfDriver {
			out = append(out, strconv.Quote(n))
		}
	}
	return out
}

// dsnKeyAliases maps spellings that other pools use (pgxpool's pool_ keys,
// database/sql's setters) to respool's key. They are not accepted; they only
// lead dsnSuggest to the right key.
var dsnKeyAliases = map[string]string{
	"respool_max_connections":          "respool_max_conns",
	"respool_max_open_conns":           "respool_max_conns",
	"respool_pool_max_conns":           "respool_max_conns",
	"respool_min_conns":                "respool_min_idle",
	"respool_min_idle_conns":           "respool_min_idle",
	"respool_max_idle_conns":           "respool_min_idle",
	"respool_idle_timeout":             "respool_max_idle_time",
	"respool_max_conn_idle_time":       "respool_max_idle_time",
	"respool_conn_max_idle_time":       "respool_max_idle_time",
	"respool_max_conn_lifetime":        "respool_max_lifetime",
	"respool_conn_max_lifetime":        "respool_max_lifetime",
	"respool_max_conn_lifetime_jitter": "respool_max_lifetime_jitter",
	"respool_health_check_period":      "respool_validation_interval",
	"respool_connect_timeout":          "respool_create_timeout",
	"respool_circuit_breaker":          "respool_breaker",
	"respool_breaker_enabled":          "respool_breaker",
	"respool_connect_retries":          "respool_retry_connect",
	"respool_connect_attempts":         "respool_retry_connect",
	"respool_backoff":                  "respool_create_backoff",
	"respool_overload_policy":          "respool_overload",
	"respool_backpressure":             "respool_back_pressure",
}

// dsnSuggest returns the valid key closest to key by edit distance (through
// dsnKeyAliases too), or "" when none is close.
func dsnSuggest(key string) string {
	k := strings.ToLower(key)
	best, bestDist := "", -1
	consider := func(candidate, suggestion string) {
		if d := dsnEditDistance(k, candidate); bestDist < 0 || d < bestDist {
			best, bestDist = suggestion, d
		}
	}
	for _, name := range dsnKeyNames() {
		consider(name, name)
	}
	aliases := slices.Sorted(maps.Keys(dsnKeyAliases))
	for _, alias := range aliases {
		consider(alias, dsnKeyAliases[alias])
	}
	if bestDist <= max(2, len(k)/5) {
		return best
	}
	return ""
}

// dsnEditDistance is the Levenshtein distance between a and b, in bytes.
func dsnEditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
