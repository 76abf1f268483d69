package driver

import (
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/respool/respool/pool"
)

// dsnForm is the syntax of a DSN (see ParseDSN).
type dsnForm uint8

const (
	dsnFormURL   dsnForm = iota + 1 // postgres:// or postgresql:// URL (pgx)
	dsnFormKV                       // libpq keyword/value (pgx)
	dsnFormMySQL                    // go-sql-driver/mysql, or any DSN with a ?query
)

const (
	dsnKeyPrefix  = "respool_"
	dsnSelfDriver = "respool" // this package's driver: it cannot wrap itself
	dsnRedacted   = "xxxxx"   // what RedactDSN writes instead of a password
	dsnSpaces     = " \t\n\v\f\r"
)

// dsnDefaultDriver is the driver a DSN of form f is for, without
// respool_driver.
func dsnDefaultDriver(f dsnForm) string {
	if f == dsnFormMySQL {
		return "mysql"
	}
	return "pgx"
}

// dsnFormOf tells the form of s.
func dsnFormOf(s string) dsnForm {
	if dsnHasURLPrefix(s) {
		return dsnFormURL
	}
	i := dsnSkipSpaces(s, 0)
	if i == len(s) {
		return dsnFormKV
	}
	j := i
	for j < len(s) && dsnIsKeywordByte(s[j]) {
		j++
	}
	if j == i {
		return dsnFormMySQL
	}
	if j = dsnSkipSpaces(s, j); j < len(s) && s[j] == '=' {
		return dsnFormKV
	}
	return dsnFormMySQL
}

func dsnHasURLPrefix(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

func dsnIsKeywordByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '_' || b == '.' || b == '-'
}

// dsnIsSpace reports the bytes libpq and pgx take as whitespace.
func dsnIsSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

func dsnSkipSpaces(s string, i int) int {
	for i < len(s) && dsnIsSpace(s[i]) {
		i++
	}
	return i
}

// dsnKind is the type of a respool key's value.
type dsnKind uint8

const (
	dsnInt dsnKind = iota + 1
	dsnDuration
	dsnBool
	dsnString
)

// dsnKey describes one respool key: how its value is read and written and
// which Config field holds it.
type dsnKey struct {
	name     string
	kind     dsnKind
	accepted string // for errors: what the key accepts
	min      int    // dsnInt: the smallest value accepted
	positive bool   // dsnDuration: zero is not accepted
	none     bool   // dsnDuration: "none" is accepted and stored as -1 (no limit)
	invert   bool   // dsnBool: the field holds the negation of the value
	// field returns a pointer to the Config field: *int, *time.Duration,
	// *bool or *string according to kind.
	field func(c *Config) any
}

const (
	dsnKeyDriver  = "respool_driver"
	dsnKeyMinIdle = "respool_min_idle"
)

// dsnKeys lists every respool key in canonical order, the order in which
// FormatDSN writes them.
var dsnKeys = []dsnKey{
	{name: dsnKeyDriver, kind: dsnString,
		accepted: `a registered database/sql driver name other than "respool"`,
		field:    func(c *Config) any { return &c.DriverName }},
	{name: "respool_max_conns", kind: dsnInt, min: 1, accepted: "an integer ≥ 1",
		field: func(c *Config) any { return &c.Pool.MaxObjects }},
	{name: dsnKeyMinIdle, kind: dsnInt, min: 0, accepted: "an integer ≥ 0",
		field: func(c *Config) any { return &c.Pool.MinIdle }},
	{name: "respool_max_idle_time", kind: dsnDuration, positive: true, none: true,
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
	{name: "respool_test_query", kind: dsnString, accepted: "a string",
		field: func(c *Config) any { return &c.TestQuery }},
	{name: "respool_leak_detection", kind: dsnBool, invert: true,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Pool.Leak.Disabled }},
	{name: "respool_leak_stack", kind: dsnBool,
		accepted: "true, false, on, off, 1 or 0",
		field:    func(c *Config) any { return &c.Pool.Leak.CaptureStack }},
	{name: "respool_leak_threshold", kind: dsnDuration,
		accepted: "a duration ≥ 0 such as 1m (0 turns the report off)",
		field:    func(c *Config) any { return &c.Pool.Leak.HoldThreshold }},
}

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
		n, err := strconv.Atoi(v)
		if err != nil || n < k.min {
			return false
		}
		*p = n
	case *time.Duration:
		if k.none && strings.EqualFold(v, "none") {
			*p = -1
			return true
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d == 0 && k.positive {
			return false
		}
		*p = d
	case *bool:
		b, ok := dsnParseBool(v)
		if !ok {
			return false
		}
		*p = b != k.invert
	case *string:
		if k.name == dsnKeyDriver && (v == "" || v == dsnSelfDriver) {
			return false
		}
		*p = v
	}
	return true
}

// format returns the value FormatDSN writes for c's field, or "" when the
// field has its zero value.
func (k *dsnKey) format(c *Config) string {
	switch p := k.field(c).(type) {
	case *int:
		if *p != 0 {
			return strconv.Itoa(*p)
		}
	case *time.Duration:
		switch {
		case *p < 0 && k.none:
			return "none"
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
		if *p < 0 && k.none {
			return slog.StringValue("none"), true
		}
		return slog.DurationValue(*p), *p != 0
	case *bool:
		return slog.BoolValue(*p != k.invert), *p
	case *string:
		return slog.StringValue(*p), *p != ""
	}
	return slog.Value{}, false
}

func dsnParseBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "true", "on", "1":
		return true, true
	case "false", "off", "0":
		return false, true
	}
	return false, false
}

// dsnParam is one respool key found in a DSN.
type dsnParam struct {
	key     string // as written; percent-decoded in the URL and mysql forms
	value   string // decoded; raw when !valueOK
	valueOK bool   // false when the value could not be percent-decoded
}

// dsnHasKeyPrefix reports whether k is in respool's namespace. Case is
// ignored here, so that "RESPOOL_MAX_CONNS" is reported as a misspelling
// instead of reaching the server.
func dsnHasKeyPrefix(k string) bool {
	return len(k) >= len(dsnKeyPrefix) && strings.EqualFold(k[:len(dsnKeyPrefix)], dsnKeyPrefix)
}

// dsnSplit removes the respool keys from s, read in form f. It returns the
// rest of s and the keys in the order they appear.
func dsnSplit(s string, f dsnForm) (rest string, params []dsnParam, err error) {
	switch f {
	case dsnFormURL:
		q, err := dsnURLQuery(s)
		if err != nil {
			return "", nil, err
		}
		rest, params = dsnSplitQuery(s, q, url.PathUnescape)
		return rest, params, nil
	case dsnFormKV:
		return dsnSplitKV(s)
	default:
		rest, params = dsnSplitQuery(s, dsnMySQLQuery(s), url.QueryUnescape)
		return rest, params, nil
	}
}

// dsnSplitQuery removes the respool keys from the query of s that starts at
// the '?' at index q (no query when q < 0). The other parameters keep their
// bytes and order; an empty query loses its '?'.
func dsnSplitQuery(s string, q int, unescape func(string) (string, error)) (string, []dsnParam) {
	if q < 0 {
		return s, nil
	}
	var (
		kept   []string
		params []dsnParam
	)
	for _, seg := range strings.Split(s[q+1:], "&") {
		rawKey, rawValue, _ := strings.Cut(seg, "=")
		key, ours := dsnQueryKey(rawKey, unescape)
		if !ours {
			kept = append(kept, seg)
			continue
		}
		p := dsnParam{key: key, value: rawValue}
		if v, err := unescape(rawValue); err == nil {
			p.value, p.valueOK = v, true
		}
		params = append(params, p)
	}
	query := strings.Join(kept, "&")
	if query == "" {
		return s[:q], params
	}
	return s[:q+1] + query, params
}

// dsnQueryKey decodes the key of a query parameter and reports whether it is
// in respool's namespace, as written or decoded.
func dsnQueryKey(raw string, unescape func(string) (string, error)) (string, bool) {
	key := raw
	if d, err := unescape(raw); err == nil {
		key = strings.Trim(d, " ")
	}
	return key, dsnHasKeyPrefix(key) || dsnHasKeyPrefix(raw)
}

// dsnURLUserEnd returns the index of the '@' that ends the user information
// of a postgres URL, or -1: like libpq, the first '@' before any '/'.
func dsnURLUserEnd(s string) int {
	pl := dsnURLPrefixLen(s)
	if i := strings.IndexAny(s[pl:], "@/"); i >= 0 && s[pl+i] == '@' {
		return pl + i
	}
	return -1
}

func dsnURLPrefixLen(s string) int {
	if strings.HasPrefix(s, "postgresql://") {
		return len("postgresql://")
	}
	return len("postgres://")
}

// dsnURLQuery returns the index of the '?' that starts the query of the
// postgres URL s, or -1, reading hosts as pgx and libpq do: a comma-separated
// list of host[:port], where a host in brackets (IPv6) may hold any byte but
// ']'.
func dsnURLQuery(s string) (int, error) {
	i := dsnURLPrefixLen(s)
	if at := dsnURLUserEnd(s); at >= 0 {
		i = at + 1
	}
	for {
		if i < len(s) && s[i] == '[' {
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return -1, fmt.Errorf(`%w: URL form: a host opens "[" and does not close it`, ErrInvalidDSN)
			}
			i += end + 1
			if i < len(s) && !strings.ContainsRune(":/?,", rune(s[i])) {
				return -1, fmt.Errorf(`%w: URL form: unexpected byte after "]" in a host (want ":", "/", "?", "," or the end)`, ErrInvalidDSN)
			}
		} else {
			i = dsnIndexFrom(s, i, ":/?,")
		}
		if i < len(s) && s[i] == ':' {
			i = dsnIndexFrom(s, i+1, "/?,")
		}
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		break
	}
	if i < len(s) && s[i] == '/' {
		if j := strings.IndexByte(s[i:], '?'); j >= 0 {
			return i + j, nil
		}
		return -1, nil
	}
	if i < len(s) && s[i] == '?' {
		return i, nil
	}
	return -1, nil
}

// dsnIndexFrom returns the index of the first byte of s[i:] in chars, or
// len(s).
func dsnIndexFrom(s string, i int, chars string) int {
	if j := strings.IndexAny(s[i:], chars); j >= 0 {
		return i + j
	}
	return len(s)
}

// dsnMySQLQuery returns the index of the '?' that starts the query of a
// mysql-form DSN, or -1: the first '?' after the last '/', or the first '?'
// when there is no '/'.
func dsnMySQLQuery(s string) int {
	if slash := strings.LastIndexByte(s, '/'); slash >= 0 {
		if q := strings.IndexByte(s[slash+1:], '?'); q >= 0 {
			return slash + 1 + q
		}
		return -1
	}
	return strings.IndexByte(s, '?')
}

// dsnKVToken is one keyword=value element of a keyword/value DSN.
type dsnKVToken struct {
	start    int    // index of the keyword
	valStart int    // index of the value (its opening quote when quoted)
	end      int    // index just after the value (after its closing quote)
	key      string // the keyword
	value    string // the value, unquoted and unescaped
}

// dsnKVTokens splits a keyword/value DSN as libpq does. When an element is
// malformed it returns the elements before it, the malformed element's index
// in s and an error; the error names the element by its position only, since
// its text may be part of a password.
func dsnKVTokens(s string) (toks []dsnKVToken, bad int, err error) {
	malformed := func(start int, what string) ([]dsnKVToken, int, error) {
		return toks, start, fmt.Errorf("%w: keyword/value form: element %d %s", ErrInvalidDSN, len(toks)+1, what)
	}
	for i := dsnSkipSpaces(s, 0); i < len(s); i = dsnSkipSpaces(s, i) {
		start := i
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return malformed(start, `is not keyword=value`)
		}
		eq += i
		key := strings.TrimRight(s[i:eq], dsnSpaces)
		if key == "" {
			return malformed(start, "has an empty keyword")
		}
		if strings.ContainsAny(key, dsnSpaces) {
			return malformed(start, `is not keyword=value`)
		}
		j := dsnSkipSpaces(s, eq+1)
		t := dsnKVToken{start: start, valStart: j, key: key}
		if j < len(s) && s[j] == '\'' {
			k := j + 1
			for ; k < len(s) && s[k] != '\''; k++ {
				if s[k] == '\\' {
					k++
				}
			}
			if k >= len(s) {
				return malformed(start, "has an unterminated quoted value")
			}
			t.value, t.end = dsnUnescapeKV(s[j+1:k]), k+1
		} else {
			k := j
			for ; k < len(s) && !dsnIsSpace(s[k]); k++ {
				if s[k] == '\\' {
					k++
					if k == len(s) {
						break
					}
				}
			}
			t.value, t.end = dsnUnescapeKV(s[j:k]), k
		}
		toks = append(toks, t)
		i = t.end
	}
	return toks, len(s), nil
}

// dsnUnescapeKV applies libpq's backslash rule: a backslash is dropped and
// the byte after it taken literally; a final backslash is dropped.
func dsnUnescapeKV(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				break
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dsnSplitKV removes the respool elements of a keyword/value DSN, each with
// one whitespace byte after it, except that the elements that end the DSN go
// with the whitespace before them instead.
func dsnSplitKV(s string) (string, []dsnParam, error) {
	toks, _, err := dsnKVTokens(s)
	if err != nil {
		return "", nil, err
	}
	var params []dsnParam
	tail := len(toks) // toks[tail:] are respool elements
	for i, t := range toks {
		if dsnHasKeyPrefix(t.key) {
			params = append(params, dsnParam{key: t.key, value: t.value, valueOK: true})
			if tail == len(toks) {
				tail = i
			}
		} else {
			tail = len(toks)
		}
	}
	switch len(params) {
	case 0:
		return s, nil, nil
	case len(toks):
		return "", params, nil // nothing but respool's keys and whitespace
	}
	var b strings.Builder
	last := 0 // s[:last] is done
	for _, t := range toks[:tail] {
		if dsnHasKeyPrefix(t.key) {
			b.WriteString(s[last:t.start])
			last = t.end
			if last < len(s) && dsnIsSpace(s[last]) {
				last++
			}
		}
	}
	end := len(s)
	if tail < len(toks) {
		// Only separators go: not back into the previous value, whose
		// last byte may be an escaped space.
		end = toks[tail].start
		for lo := max(last, toks[tail-1].end); end > lo && dsnIsSpace(s[end-1]); end-- {
		}
	}
	b.WriteString(s[last:end])
	return b.String(), params, nil
}

// ParseDSN reads a respool DSN: the underlying driver's DSN with respool's
// keys added, as in
//
//	postgres://app:pw@db:5432/app?sslmode=verify-full&respool_max_conns=20
//	host=db dbname=app user=app password='p w' respool_max_conns=20
//	app:pw@tcp(db:3306)/app?parseTime=true&respool_max_conns=20
//
// The returned Config holds the underlying driver's name, its DSN without
// respool's keys, and the settings the keys give. respool's keys all start
// with "respool_" and are removed before the DSN reaches the underlying
// driver: pgx would send an unknown key to the server as a run-time
// parameter, go-sql-driver/mysql as a system variable. Every other parameter
// keeps its bytes and its place (order, percent-encoding, quoting); only the
// separators of the removed keys go, and a '?' left with an empty query.
//
// The keys and the fields they set (the README has types, defaults and
// meanings); a key that is absent leaves its field at the zero value, which
// pool.Config documents as the default:
//
//	respool_driver                  DriverName
//	respool_max_conns               Pool.MaxObjects            integer ≥ 1
//	respool_min_idle                Pool.MinIdle               integer ≥ 0, ≤ max_conns
//	respool_max_idle_time           Pool.MaxIdle               duration > 0, or none (-1)
//	respool_max_lifetime            Pool.MaxLifetime           duration ≥ 0
//	respool_max_lifetime_jitter     Pool.MaxLifetimeJitter     duration ≥ 0
//	respool_max_queue               Pool.MaxQueueSize          integer ≥ 1
//	respool_max_concurrent_creates  Pool.MaxConcurrentCreates  integer ≥ 1
//	respool_create_timeout          Pool.CreateTimeout         duration > 0
//	respool_test_timeout            Pool.TestTimeout           duration > 0
//	respool_validation_interval     Pool.ValidationInterval    duration > 0
//	respool_test_query              TestQuery                  string
//	respool_leak_detection          !Pool.Leak.Disabled        true/false/on/off/1/0
//	respool_leak_stack              Pool.Leak.CaptureStack     true/false/on/off/1/0
//	respool_leak_threshold          Pool.Leak.HoldThreshold    duration ≥ 0
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
// the closest key for an unknown one. A key given twice is an error. Errors
// never hold the DSN or its password.
func ParseDSN(dsn string) (*Config, error) {
	form := dsnFormOf(dsn)
	rest, params, err := dsnSplit(dsn, form)
	if err != nil {
		return nil, err
	}
	c := &Config{DriverName: dsnDefaultDriver(form), DSN: rest}
	seen := make(map[string]bool, len(params))
	var minIdle, driverKey *dsnParam
	for i := range params {
		p := &params[i]
		k := dsnLookupKey(p.key)
		if k == nil {
			return nil, &DSNError{Key: p.key, Suggestion: dsnSuggest(p.key)}
		}
		if seen[k.name] {
			return nil, &DSNError{Key: p.key, Value: p.value, Duplicate: true}
		}
		seen[k.name] = true
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
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidDSN, err)
	}
	return c, nil
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

// FormatDSN returns the DSN that ParseDSN reads back as c: c.DSN with the
// respool keys whose fields differ from their zero value, in the canonical
// order of the README. respool_driver is written when c.DriverName is not
// the driver that the DSN's form implies. Connector, Pool.Clock, Pool.Logger
// and Pool.Name have no key and are left out. For a Config from ParseDSN,
// ParseDSN(c.FormatDSN()) equals c.
//
// The keys go where the DSN's form puts parameters: at the end of the query
// of a URL or mysql-form DSN ('?' or '&' first, values percent-encoded), and
// in front of a keyword/value DSN (values single-quoted when needed), since
// at its end they could become the value of a last "keyword=" with an empty
// value. An empty DSN gets the keyword/value form, a blank one the mysql
// form. A DSN whose own form would not read it back unchanged, such as the
// keyword/value element "x/y=1?" (which reads as a mysql-form DSN with an
// empty query), gets the keys in keyword/value form, with respool_driver.
func (c *Config) FormatDSN() string {
	form := dsnPlacement(c.DSN)
	var pairs [][2]string
	for i := range dsnKeys {
		k := &dsnKeys[i]
		if k.name == dsnKeyDriver {
			continue
		}
		if v := k.format(c); v != "" {
			pairs = append(pairs, [2]string{k.name, v})
		}
	}
	if len(pairs) == 0 {
		own := dsnFormOf(c.DSN)
		if c.DriverName == "" || c.DriverName == dsnDefaultDriver(own) && dsnReadsBack(c.DSN, own) {
			return c.DSN
		}
	}
	// With no other key, respool_driver is written even when it names the
	// placement's default driver: it makes ParseDSN read the placement's
	// form.
	withDriver := c.DriverName != "" && (c.DriverName != dsnDefaultDriver(form) || len(pairs) == 0)
	if withDriver {
		pairs = slices.Insert(pairs, 0, [2]string{dsnKeyDriver, c.DriverName})
	}

	var b strings.Builder
	if form == dsnFormKV {
		dsnWritePairs(&b, pairs, ' ', dsnQuoteKV)
		if c.DSN != "" {
			b.WriteByte(' ')
			b.WriteString(c.DSN)
		}
		return b.String()
	}
	q := dsnMySQLQuery(c.DSN)
	if form == dsnFormURL {
		var err error
		if q, err = dsnURLQuery(c.DSN); err != nil {
			q = -1
		}
	}
	b.WriteString(c.DSN)
	switch {
	case q < 0:
		b.WriteByte('?')
	case q < len(c.DSN)-1:
		b.WriteByte('&')
	}
	dsnWritePairs(&b, pairs, '&', dsnEscapeQuery)
	return b.String()
}

// dsnWritePairs writes key=value pairs separated by sep, each value encoded
// for the DSN's form.
func dsnWritePairs(b *strings.Builder, pairs [][2]string, sep byte, encode func(string) string) {
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(sep)
		}
		b.WriteString(p[0])
		b.WriteByte('=')
		b.WriteString(encode(p[1]))
	}
}

// dsnPlacement returns the form in which FormatDSN adds keys to d: d's own
// form when d reads back unchanged in it (no respool key, no empty query),
// else keyword/value when d is made of keyword=value elements.
func dsnPlacement(d string) dsnForm {
	if d != "" && strings.Trim(d, dsnSpaces) == "" {
		// Blank: keys written in front would take the blanks with them, as
		// the last element goes with the whitespace around it.
		return dsnFormMySQL
	}
	f := dsnFormOf(d)
	if dsnReadsBack(d, f) {
		return f
	}
	if f != dsnFormKV && dsnReadsBack(d, dsnFormKV) {
		return dsnFormKV
	}
	return f
}

func dsnReadsBack(d string, f dsnForm) bool {
	rest, params, err := dsnSplit(d, f)
	return err == nil && params == nil && rest == d
}

// dsnQuoteKV writes v as a libpq keyword/value value: as is when it has no
// whitespace, quote or backslash, else single-quoted with backslash escapes.
func dsnQuoteKV(v string) string {
	if v != "" && !strings.ContainsAny(v, dsnSpaces+`'\`) {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		if v[i] == '\'' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// dsnEscapeQuery percent-encodes every byte of v but A-Z a-z 0-9 - . _ ~, so
// that the value reads back the same in the URL and mysql forms and cannot
// contain a separator ('&', '=', '?', '/', '@', '+', space).
func dsnEscapeQuery(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' ||
			ch == '-' || ch == '.' || ch == '_' || ch == '~' {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
	return b.String()
}

// RedactDSN returns dsn with its password replaced by "xxxxx", for logs and
// errors. It reads dsn as ParseDSN does:
//
//   - URL: the password of the user information (user:password@), and the
//     values of password-like query parameters. When libpq's rule finds no
//     user information (a password with an unescaped '/'), the text before
//     the last '@' ahead of the query is taken as user information.
//   - keyword/value: the values of password and sslpassword. Everything from
//     a malformed element (an unterminated quote) on is replaced.
//   - mysql: the password of user:password@ (before the last '@' that is
//     before the last '/'), or of a scheme://user:password@host DSN of
//     another driver, and the values of password-like query parameters.
//
// A DSN without a password is returned unchanged. The redacted DSN is for
// reading, not for connecting.
func RedactDSN(dsn string) string {
	switch dsnFormOf(dsn) {
	case dsnFormURL:
		return dsnRedactURL(dsn)
	case dsnFormKV:
		return dsnRedactKV(dsn)
	default:
		return dsnRedactMySQL(dsn)
	}
}

// dsnSecretKeys are parameter keys, lower case, whose values RedactDSN
// replaces.
var dsnSecretKeys = []string{"password", "sslpassword", "passwd", "pwd", "pass", "_auth_pass"}

func dsnIsSecretKey(key string) bool {
	return slices.Contains(dsnSecretKeys, strings.ToLower(key))
}

func dsnRedactURL(s string) string {
	pl := dsnURLPrefixLen(s)
	q, err := dsnURLQuery(s)
	at := dsnURLUserEnd(s)
	if err != nil {
		// The hosts cannot be read, and so neither can the query as pgx
		// would: take the first '?' after the user information.
		q = -1
		from := max(pl, at+1)
		if i := strings.IndexByte(s[from:], '?'); i >= 0 {
			q = from + i
		}
	}
	head, tail := s, ""
	if q >= 0 {
		head, tail = s[:q], s[q:]
	}
	if at < 0 {
		if i := strings.LastIndexByte(head[pl:], '@'); i >= 0 {
			at = pl + i
		}
	}
	if at >= 0 {
		head = dsnRedactUserinfo(head, pl, at)
	}
	return head + dsnRedactQuery(tail, url.PathUnescape)
}

func dsnRedactMySQL(s string) string {
	head, tail := s, ""
	if q := dsnMySQLQuery(s); q >= 0 {
		head, tail = s[:q], s[q:]
	}
	if se := dsnSchemeEnd(head); se >= 0 {
		from := se + len("://")
		auth := head[from:]
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			head = dsnRedactUserinfo(head, from, from+at)
		}
	} else {
		region := head
		if slash := strings.LastIndexByte(head, '/'); slash >= 0 {
			region = head[:slash]
		}
		if at := strings.LastIndexByte(region, '@'); at >= 0 {
			head = dsnRedactUserinfo(head, 0, at)
		}
	}
	return head + dsnRedactQuery(tail, url.QueryUnescape)
}

// dsnSchemeEnd returns the index of the ':' of a leading "scheme://", or -1.
func dsnSchemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z':
		case i > 0 && ('0' <= ch && ch <= '9' || ch == '+' || ch == '-' || ch == '.'):
		case i > 0 && ch == ':' && strings.HasPrefix(s[i:], "://"):
			return i
		default:
			return -1
		}
	}
	return -1
}

// dsnRedactUserinfo replaces the password in the user information s[from:at]
// (user:password, at indexing the '@').
func dsnRedactUserinfo(s string, from, at int) string {
	colon := strings.IndexByte(s[from:at], ':')
	if colon < 0 || from+colon+1 == at {
		return s
	}
	return s[:from+colon+1] + dsnRedacted + s[at:]
}

// dsnRedactQuery replaces the values of password-like parameters in tail, a
// query with its leading '?' (or "").
func dsnRedactQuery(tail string, unescape func(string) (string, error)) string {
	if tail == "" {
		return tail
	}
	segs := strings.Split(tail[1:], "&")
	changed := false
	for i, seg := range segs {
		rawKey, value, ok := strings.Cut(seg, "=")
		if !ok || value == "" {
			continue
		}
		key := rawKey
		if d, err := unescape(rawKey); err == nil {
			key = strings.Trim(d, " ")
		}
		if dsnIsSecretKey(key) {
			segs[i] = rawKey + "=" + dsnRedacted
			changed = true
		}
	}
	if !changed {
		return tail
	}
	return tail[:1] + strings.Join(segs, "&")
}

func dsnRedactKV(s string) string {
	toks, bad, err := dsnKVTokens(s)
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if dsnIsSecretKey(t.key) && t.valStart < t.end {
			b.WriteString(s[last:t.valStart])
			b.WriteString(dsnRedacted)
			last = t.end
			if last < len(s) && !dsnIsSpace(s[last]) {
				// A quoted value may touch the next element ('x'y=1):
				// keep them apart, as xxxxx is not quoted.
				b.WriteByte(' ')
			}
		}
	}
	if err == nil {
		b.WriteString(s[last:])
		return b.String()
	}
	b.WriteString(s[last:bad])
	b.WriteString(dsnRedacted)
	return b.String()
}
