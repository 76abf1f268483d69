package respool

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
)

// ErrInvalidConfig is matched (errors.Is) by every error of a configuration
// respool cannot use: a DSN ParseDSN (and so sql.Open and OpenDB) refuses,
// each *DSNError and the errors for a DSN whose structure cannot be read (an
// unterminated quote, an unterminated "[" in a URL host), and a Config
// NewConnector refuses. When a mechanism's configuration is at fault (the
// pool's, the Resilience's), errors.As also finds the
// *resilience.ConfigError that names the field.
var ErrInvalidConfig = errors.New("respool: invalid Config")

// dsnStructureError is the error of a DSN whose structure cannot be read.
type dsnStructureError struct{ err error }

func (e *dsnStructureError) Error() string { return "respool: invalid DSN: " + e.err.Error() }
func (e *dsnStructureError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *dsnStructureError) Is(target error) bool { return target == ErrInvalidConfig }

// DSNError reports a respool key of a DSN that is not accepted: an unknown
// respool_ key, a value that does not parse or is out of range, or a key given
// twice; or a key of another pool that respool does not read (Owner). errors.Is(err, ErrInvalidConfig) is true for it: a DSN is
// configuration.
//
// It never holds the DSN or its password: only the respool key and its value,
// which are never secrets.
type DSNError struct {
	// Key is the respool key as written (percent-decoded in the URL and
	// mysql forms).
	Key string
	// Value is the key's value, decoded as ParseDSN reads it (percent-decoded,
	// or unquoted in the keyword/value form); raw when it could not be
	// decoded.
	Value string
	// Accepted says what the key accepts, for example "an integer ≥ 1". It is
	// empty for an unknown key.
	Accepted string
	// Suggestion is, for an unknown key, the valid key closest to it, or
	// empty when none is close.
	Suggestion string
	// Duplicate is true when Key appears more than once; Value is then its
	// second value.
	Duplicate bool
	// Owner is set for a key of another pool that the driver would pass on
	// to the server, which refuses it: "pgxpool" for its pool_ keys
	// (pool_max_conns, ...). Suggestion is then respool's key.
	Owner string
}

func (e *DSNError) Error() string {
	var b strings.Builder
	switch {
	case e.Owner != "":
		b.WriteString("respool: DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		b.WriteString(" (value ")
		b.WriteString(dsnform.Quote(e.Value))
		b.WriteString(") is ")
		b.WriteString(e.Owner)
		b.WriteString("'s, which respool does not read (the driver would pass it on to the server, which refuses it): use ")
		b.WriteString(e.Suggestion)
		b.WriteString(" instead")
	case e.Duplicate:
		b.WriteString("respool: DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		b.WriteString(" is given more than once: want it at most once")
	case e.Accepted == "":
		b.WriteString("respool: unknown DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		if e.Suggestion != "" {
			b.WriteString(" (did you mean ")
			b.WriteString(dsnform.Quote(e.Suggestion))
			b.WriteString("?)")
		} else {
			b.WriteString("; valid keys: ")
			b.WriteString(strings.Join(dsnKeyNames(), ", "))
		}
	default:
		b.WriteString("respool: DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		b.WriteString(" has invalid value ")
		b.WriteString(dsnform.Quote(e.Value))
		b.WriteString(": want ")
		b.WriteString(e.Accepted)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *DSNError) Is(target error) bool { return target == ErrInvalidConfig }

// pgxpoolKeys maps the keys pgxpool reads from a DSN (and deletes before
// pgx sees it) to respool's. pgx alone, as under respool, sends them to the
// server as run-time parameters, which fails the first connection with
// "unrecognized configuration parameter" (go-sql-driver/mysql: "Unknown
// system variable"), so refusePgxpoolKeys refuses them at once.
var pgxpoolKeys = map[string]string{
	"pool_max_conns":                "respool_max_conns",
	"pool_min_conns":                "respool_min_idle",
	"pool_min_idle_conns":           "respool_min_idle",
	"pool_max_conn_lifetime":        "respool_max_lifetime",
	"pool_max_conn_lifetime_jitter": "respool_max_lifetime_jitter",
	"pool_max_conn_idle_time":       "respool_max_idle_time",
	"pool_health_check_period":      "respool_validation_interval",
	"pool_ping_timeout":             "respool_test_timeout",
}

// refusePgxpoolKeys returns a *DSNError for the first of pgxpoolKeys (any
// case) in rest, the DSN the driver gets.
func refusePgxpoolKeys(rest string) error {
	if !strings.Contains(strings.ToLower(rest), "pool_") {
		return nil
	}
	_, params, err := dsnform.Split(rest, "pool_")
	if err != nil {
		return nil // the DSN's structure is the driver's to report
	}
	for _, p := range params {
		if k, ok := pgxpoolKeys[strings.ToLower(p.Key)]; ok {
			return &DSNError{Key: p.Key, Value: p.Value, Suggestion: k, Owner: "pgxpool"}
		}
	}
	return nil
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

// dsnConfigError returns, for err, the error of a mechanism's
// configuration (within is where it sits in Config: "Pool." or
// "Resilience."), a *DSNError of the key that set the field at fault, when
// that key is one of text's: the Config came from ParseDSN, and its user
// knows the key, not the field. The rule's other fields are named by their
// keys too. It returns nil when err is not such an error, or no key of
// text set the field (a Config made in code: its error names the field).
func dsnConfigError(text *dsnform.Text, within string, err error) error {
	var ce *resilience.ConfigError
	if text == nil || len(text.Params) == 0 || !errors.As(err, &ce) {
		return nil
	}
	k := dsnKeyPaths()[within+ce.Field]
	if k == nil {
		return nil
	}
	for _, p := range text.Params {
		if p.Key == k.name {
			parent := within + ce.Field[:strings.LastIndexByte(ce.Field, '.')+1]
			return &dsnFieldError{dsn: &DSNError{Key: p.Key, Value: p.Value, Accepted: dsnNameKeys(ce.Accepted, parent)}, field: ce}
		}
	}
	return nil
}

// dsnFieldError is a mechanism's *resilience.ConfigError reported as the
// DSN's key that set the field: its text is the *DSNError's, and errors.As
// finds both (errors.Is(err, ErrInvalidConfig) through the DSNError).
type dsnFieldError struct {
	dsn   *DSNError
	field *resilience.ConfigError
}

func (e *dsnFieldError) Error() string   { return e.dsn.Error() }
func (e *dsnFieldError) Unwrap() []error { return []error{e.dsn, e.field} }

// dsnNameKeys returns s, a mechanism's description of what it accepts, with
// each name of a field of parent (a path in Config, "Pool.") that a key
// sets replaced by the key: "not shorter than ValidationInterval" becomes
// "not shorter than respool_validation_interval".
func dsnNameKeys(s, parent string) string {
	paths := dsnKeyPaths()
	var b strings.Builder
	for s != "" {
		n := strings.IndexFunc(s, func(r rune) bool { return !isIdentRune(r) })
		if n < 0 {
			n = len(s)
		}
		if n == 0 { // a rune that is no part of a name
			_, size := utf8.DecodeRuneInString(s)
			b.WriteString(s[:size])
			s = s[size:]
			continue
		}
		if k := paths[parent+s[:n]]; k != nil {
			b.WriteString(k.name)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

func isIdentRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// dsnKeyPaths maps the path in Config of each field a key sets
// ("Pool.MaxIdle", "Resilience.Breaker.OpenDelay.Max") to the key. The
// paths are found once, from the keys' field accessors, by the address
// and type of each field of a Config.
var dsnKeyPaths = sync.OnceValue(func() map[string]*dsnKey {
	var c Config
	fields := make(map[dsnFieldAddr]string)
	dsnWalkFields(reflect.ValueOf(&c).Elem(), "", fields)
	paths := make(map[string]*dsnKey, len(dsnKeys))
	for i := range dsnKeys {
		k := &dsnKeys[i]
		for _, a := range k.fieldAddrs(&c) {
			if path, ok := fields[a]; ok {
				paths[path] = k
			}
		}
	}
	return paths
})

// dsnFieldAddr is a field of a Config: its address and type (a struct and
// its first field share an address).
type dsnFieldAddr struct {
	addr uintptr
	typ  reflect.Type
}

func dsnAddrOf(ptr any) dsnFieldAddr {
	v := reflect.ValueOf(ptr)
	return dsnFieldAddr{v.Pointer(), v.Type().Elem()}
}

// dsnWalkFields records the exported fields of the struct v, and of the
// structs among them, by address, as paths below prefix.
func dsnWalkFields(v reflect.Value, prefix string, into map[dsnFieldAddr]string) {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		f := v.Field(i)
		into[dsnFieldAddr{f.Addr().Pointer(), f.Type()}] = prefix + sf.Name
		if f.Kind() == reflect.Struct {
			dsnWalkFields(f, prefix+sf.Name+".", into)
		}
	}
}

// fieldAddrs returns the fields of c that k sets.
func (k *dsnKey) fieldAddrs(c *Config) []dsnFieldAddr {
	switch p := k.field(c).(type) {
	case dsnBackoffField:
		return []dsnFieldAddr{dsnAddrOf(p.initial), dsnAddrOf(p.disabled)}
	case *delay.Strategy:
		if k.delayMax {
			return []dsnFieldAddr{dsnAddrOf(&p.Max)}
		}
		return []dsnFieldAddr{dsnAddrOf(&p.Initial)}
	default:
		return []dsnFieldAddr{dsnAddrOf(p)}
	}
}
