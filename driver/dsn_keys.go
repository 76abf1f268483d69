package driver

import (
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
)

const (
	dsnKeyPrefix  = "respool_"
	dsnSelfDriver = "respool" // this package's driver: it cannot wrap itself
)

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
	dsnBackoff // pool.BackoffConfig: a duration for Initial, or "off" for Disabled
)

// dsnKey describes one respool key: how its value is read and written and
// which Config field holds it.
type dsnKey struct {
	name     string
	kind     dsnKind
	accepted string // for errors: what the key accepts
	min      int    // dsnInt: the smallest value accepted
	positive bool   // dsnDuration: zero is not accepted
	// off, for a dsnDuration, is a word (any case) accepted and stored as
	// -1: "none" for no limit, "off" for no report; with offZero, and for a
	// dsnInt, it is stored as 0, the default, which is off.
	off     string
	offZero bool
	invert  bool // dsnBool: the field holds the negation of the value
	// field returns a pointer to the Config field: *int, *time.Duration,
	// *bool, *string, *[]string, *float64, *pool.OverloadPolicy or
	// *pool.BackoffConfig according to kind.
	field func(c *Config) any
}

const (
	dsnKeyDriver  = "respool_driver"
	dsnKeyName    = "respool_name"
	dsnKeyMinIdle = "respool_min_idle"
	dsnKeyInitSQL = "respool_init_sql"
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
	{name: "respool_max_idle_time", kind: dsnDuration, positive: true, off: "none",
		accepted: `a duration > 0 such as 5m, or "none" for no limit`,
		field:    func(c *Config) any { return &c.Pool.MaxIdle }},
	{name: "respool_max_lifetime", kind: dsnDuration,
		accepted: "a duration ≥ 0 such as 1h (0 means no limit)",
		field:    func(c *Config) any { return &c.Pool.MaxLifetime }},
	{name: "respool_max_lifetime_jitter", kind: dsnDuration,
		accepted: "a duration ≥ 0 such as 5m",
		field:    func(c *Config) any { return &c.Pool.MaxLifetimeJitter }},
	{name: "respool_max_queue", kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Pool.MaxQueueSize }},
	{name: "respool_acquire_timeout", kind: dsnDuration,
		accepted: "a duration ≥ 0 such as 2s (0: no bound but the caller's context)",
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
	{name: "respool_close_timeout", kind: dsnDuration,
		accepted: "a duration ≥ 0 such as 30s (0: Close does not wait)",
		field:    func(c *Config) any { return &c.CloseTimeout }},
	{name: "respool_cancel_wait", kind: dsnDuration, positive: true, off: "off",
		accepted: `a duration > 0 such as 500ms, or "off" (pgx closes the connection at once)`,
		field:    func(c *Config) any { return &c.CancelWait }},
	{name: "respool_session_end_wait", kind: dsnDuration, positive: true, off: "off",
		accepted: `a duration > 0 such as 5s, or "off" (the slot is freed when the driver's Close returns)`,
		field:    func(c *Config) any { return &c.SessionEndWait }},
	{name: "respool_test_query", kind: dsnString, accepted: "a string",
		field: func(c *Config) any { return &c.TestQuery }},
	{name: dsnKeyInitSQL, kind: dsnStrings,
		accepted: "one SQL statement, not empty (give the key once per statement)",
		field:    func(c *Config) any { return &c.InitSQL }},
	{name: "respool_leak_detection", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Pool.Leak.Disabled }},
	{name: "respool_leak_stack", kind: dsnBool,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Pool.Leak.CaptureStack }},
	{name: "respool_leak_threshold", kind: dsnDuration, positive: true, off: "off",
		accepted: `a duration > 0 such as 1m, or "off" for no hold-time report`,
		field:    func(c *Config) any { return &c.Pool.Leak.HoldThreshold }},
	{name: dsnKeyCreateBackoff, kind: dsnBackoff,
		accepted: `a duration > 0 such as 50ms, or "off" for no backoff`,
		field:    func(c *Config) any { return &c.Pool.CreateBackoff }},
	{name: dsnKeyCreateBackoffMax, kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 1s, at least respool_create_backoff",
		field:    func(c *Config) any { return &c.Pool.CreateBackoff.Max }},
	{name: "respool_overload", kind: dsnEnum, accepted: "deadline, codel or fifo",
		field: func(c *Config) any { return &c.Pool.Overload.Policy }},
	{name: "respool_back_pressure", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Resilience.BackPressureDisabled }},
	{name: "respool_breaker", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Resilience.Breaker.Disabled }},
	{name: dsnKeyBreakerWindow, kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Resilience.Breaker.WindowSize }},
	{name: dsnKeyBreakerMinCalls, kind: dsnInt, min: 1, accepted: "an integer ≥ 1, at most respool_breaker_window",
		field: func(c *Config) any { return &c.Resilience.Breaker.MinimumCalls }},
	{name: "respool_breaker_failure_rate", kind: dsnRate, accepted: "a number > 0 and ≤ 1 such as 0.5",
		field: func(c *Config) any { return &c.Resilience.Breaker.FailureRate }},
	{name: "respool_breaker_open_delay", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 220ms",
		field:    func(c *Config) any { return &c.Resilience.Breaker.OpenDelay }},
	{name: "respool_breaker_max_open_delay", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 5s",
		field:    func(c *Config) any { return &c.Resilience.Breaker.MaxOpenDelay }},
	{name: "respool_breaker_slow_call", kind: dsnDuration, positive: true, off: "off", offZero: true,
		accepted: `a duration > 0 such as 5s, or "off"`,
		field:    func(c *Config) any { return &c.Resilience.Breaker.SlowCall }},
	{name: "respool_retry_connect", kind: dsnInt, min: 1, accepted: "an integer ≥ 1 (1: no retry)",
		field: func(c *Config) any { return &c.Resilience.Retry.Attempts }},
	{name: "respool_connect_rate", kind: dsnInt, min: 1, off: "off",
		accepted: `an integer ≥ 1 (attempts a second), or "off"`,
		field:    func(c *Config) any { return &c.Resilience.ConnectRate }},
	{name: "respool_pause", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Resilience.Pause.Disabled }},
	{name: "respool_max_pause", kind: dsnDuration, positive: true,
		accepted: "a duration > 0 such as 30s",
		field:    func(c *Config) any { return &c.Resilience.Pause.MaxPause }},
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
		if k.off != "" && strings.EqualFold(v, k.off) {
			*p = 0
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
	case *pool.BackoffConfig:
		if strings.EqualFold(v, "off") {
			p.Disabled = true
			return true
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return false
		}
		p.Initial = d
	case *time.Duration:
		if k.off != "" && strings.EqualFold(v, k.off) {
			*p = -1
			if k.offZero {
				*p = 0
			}
			return true
		}
		d, err := time.ParseDuration(v)
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
		case k.name == dsnKeyDriver && (v == "" || v == dsnSelfDriver):
			return false
		case k.name == dsnKeyName && strings.IndexFunc(v, unicode.IsControl) >= 0:
			return false
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
	case *pool.BackoffConfig:
		switch {
		case p.Disabled:
			return "off"
		case p.Initial != 0:
			return p.Initial.String()
		}
	case *time.Duration:
		switch {
		case *p < 0 && k.off != "":
			return k.off
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
		if *p < 0 && k.off != "" {
			return slog.StringValue(k.off), true
		}
		return slog.DurationValue(*p), *p != 0
	case *bool:
		return slog.BoolValue(*p != k.invert), *p
	case *string:
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
