package chaos

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/respool/respool/internal/dsnform"
)

const keyPrefix = "chaos_"

// The keys of the Connector itself.
const (
	keyDriver = "chaos_driver"
	keyName   = "chaos_name"
	keySeed   = "chaos_seed"
)

// dsnFault is a Fault that DSN keys configure: chaos_NAME and
// chaos_NAME_SUFFIX.
type dsnFault struct {
	name string
	kind Kind
	on   Op // OpConnect for the connect faults; 0 (OpStatements, or chaos_NAME_on) otherwise
}

// dsnFaults lists the DSN's Faults in the order of Config.Faults, which is
// their precedence (see Config.Faults).
var dsnFaults = []dsnFault{
	{"latency", KindLatency, 0},
	{"connect_latency", KindLatency, OpConnect},
	{"refuse", KindRefuse, OpConnect},
	{"connect_freeze", KindFreeze, OpConnect},
	{"connect_error", KindError, OpConnect},
	{"freeze", KindFreeze, 0},
	{"drop", KindDrop, 0},
	{"error", KindError, 0},
}

// The suffixes of a Fault's keys: the trigger, and KindLatency's jitter.
var dsnSuffixes = []string{"", "_jitter", "_rate", "_every", "_during", "_on", "_off"}

// dsnError reports a chaos key of a DSN that is not accepted: an unknown
// key, a value that does not parse, or a key given twice. It holds the key
// and its value only, never the DSN or its password, and matches
// ErrInvalidConfig.
type dsnError struct {
	key      string // as written (percent-decoded)
	value    string // as read; raw when it could not be decoded
	accepted string // what the key accepts; empty for an unknown key
	// duplicate is true when key appears more than once; value is then its
	// second value.
	duplicate bool
}

func (e *dsnError) Error() string {
	switch {
	case e.duplicate:
		return fmt.Sprintf("chaos: DSN key %s is given more than once: want it at most once", dsnform.Quote(e.key))
	case e.accepted == "":
		names := make([]string, len(dsnFaults))
		for i, f := range dsnFaults {
			names[i] = f.name
		}
		return fmt.Sprintf("chaos: unknown DSN key %s; valid keys: %s, %s, %s, and chaos_FAULT, chaos_FAULT_jitter "+
			"(latency), _rate, _every, _during, _on (not connect), _off, with FAULT one of %s",
			dsnform.Quote(e.key), keyDriver, keyName, keySeed, strings.Join(names, ", "))
	}
	return fmt.Sprintf("chaos: DSN key %s has invalid value %s: want %s", dsnform.Quote(e.key), dsnform.Quote(e.value), e.accepted)
}

// Is makes errors.Is(err, ErrInvalidConfig) true: a DSN is configuration.
func (e *dsnError) Is(target error) bool { return target == ErrInvalidConfig }

// ParseDSN reads a chaos DSN: the wrapped driver's DSN with chaos's keys
// added, as in
//
//	postgres://app:pw@db/app?sslmode=disable&chaos_error=40001&chaos_error_rate=0.1&chaos_seed=7
//	host=db dbname=app chaos_refuse_every=3
//	app:pw@tcp(db:3306)/app?chaos_drop=after&chaos_drop_rate=5%
//
// The keys (prefix chaos_, in any case) are removed before the DSN reaches
// the wrapped driver, as respool's driver removes its own (the other
// parameters keep their bytes and places). The DSN's form, told as
// respool's driver tells it,
// chooses that driver unless chaos_driver names another: a
// postgres:// or postgresql:// URL, or libpq keyword=value elements, is for
// "pgx"; anything else ([user[:password]@][net[(addr)]]/dbname[?query], or
// another driver's DSN with a ?query) for "mysql". The query of a URL starts
// at the first '?' after the user information; that of a mysql-form DSN at
// the first '?' after the last '/'. Values are percent-decoded (a '+' is a
// space in the mysql form only); keyword/value values may be single-quoted.
//
// The keys:
//
//	chaos_driver   the wrapped driver: pgx, mysql or another registered name
//	chaos_name     the Connector's name, for Lookup
//	chaos_seed     an integer ≥ 0 (0: random; Stats().Seed tells it)
//
// and for each FAULT of latency, connect_latency, refuse, connect_freeze,
// connect_error, freeze, drop and error (the connect_ ones and refuse apply
// to connection attempts, the others to Exec and Query unless
// chaos_FAULT_on says otherwise):
//
//	chaos_latency, chaos_connect_latency   the fixed delay, a duration (20ms)
//	chaos_FAULT_jitter                     latency: a random extra delay in [0, jitter)
//	chaos_error, chaos_connect_error       the error: a SQLSTATE (pgx), an error number
//	                                       (mysql), or pg:SQLSTATE / mysql:NUMBER
//	chaos_drop                             before (driver.ErrBadConn, default) or after
//	                                       (the call runs, then the connection is lost)
//	chaos_refuse, chaos_freeze,            on or off (off: starts switched off)
//	  chaos_connect_freeze
//	chaos_FAULT_rate                       a probability > 0 and ≤ 1: 0.25 or 25%
//	chaos_FAULT_every                      an integer ≥ 1: every Nth call
//	chaos_FAULT_during                     windows since the Connector started:
//	                                       FROM-TO[,FROM-TO...], TO may be empty (5s-10s,1m-)
//	chaos_FAULT_on                         ops: exec, query, prepare, begin, commit,
//	                                       rollback, ping, reset (comma-separated)
//	chaos_FAULT_off                        true: starts switched off (Connector.Enable)
//
// Any of a FAULT's keys configures it; latency needs its delay or jitter,
// error its code. A Fault's Name is FAULT. Without a rate, every or during
// key, a Fault hits every call it applies to. Booleans are true, false, on,
// off, 1 or 0.
//
// Every error matches errors.Is(err, ErrInvalidConfig); one about a key
// names the key, its value and what is accepted. A password that
// the DSN's form cannot carry as written (a URL password holding an
// unencoded '@' or '/') is refused with an error that says to
// percent-encode it, as respool's driver refuses it. Errors never hold the
// DSN or its password.
func ParseDSN(dsn string) (*Config, error) {
	cfg, _, err := parseDSN(dsn)
	return cfg, err
}

// parseDSN is ParseDSN. It also returns the DSN as read (dsnform.Read: the
// rest for the wrapped driver and its secrets), for the Connector, which
// need not read it again.
func parseDSN(dsn string) (*Config, *dsnform.Text, error) {
	text, err := dsnform.Read(dsn, keyPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: DSN: %w", ErrInvalidConfig, err)
	}
	cfg := &Config{DriverName: text.Form.Driver(), DSN: text.Rest}
	seen := map[string]bool{}
	for _, p := range text.Params {
		if seen[p.Key] {
			return nil, nil, &dsnError{key: p.Key, value: p.Value, duplicate: true}
		}
		seen[p.Key] = true
		if !p.ValueOK {
			return nil, nil, &dsnError{key: p.Key, value: p.Value, accepted: "a percent-encoded value"}
		}
		if p.Key == keyDriver {
			if p.Value == "" || p.Value == driverName {
				return nil, nil, &dsnError{key: p.Key, value: p.Value, accepted: `a registered database/sql driver other than "chaos"`}
			}
			if !slices.Contains(sql.Drivers(), p.Value) {
				return nil, nil, &dsnError{key: p.Key, value: p.Value,
					accepted: "a registered database/sql driver other than \"chaos\": " + strings.Join(wrappable(), ", ")}
			}
			cfg.DriverName = p.Value
		}
	}
	faults := make([]*Fault, len(dsnFaults))
	for _, p := range text.Params {
		if err := cfg.set(faults, p); err != nil {
			return nil, nil, err
		}
	}
	for i, fp := range faults {
		if fp == nil {
			continue
		}
		df := dsnFaults[i]
		switch {
		case fp.Kind == KindLatency && fp.Latency == 0 && fp.Jitter == 0:
			return nil, nil, fmt.Errorf("%w: DSN: %s%s needs %s%s: the delay (or %s%s_jitter)", ErrInvalidConfig,
				keyPrefix, df.name, keyPrefix, df.name, keyPrefix, df.name)
		case fp.Kind == KindError && fp.Err == nil:
			return nil, nil, fmt.Errorf("%w: DSN: %s%s's keys need %s%s: the code to inject", ErrInvalidConfig,
				keyPrefix, df.name, keyPrefix, df.name)
		}
		cfg.Faults = append(cfg.Faults, *fp)
	}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	return cfg, text, nil
}

// set stores the key p in cfg, or in the Fault it configures.
func (cfg *Config) set(faults []*Fault, p dsnform.Param) error {
	bad := func(accepted string) error { return &dsnError{key: p.Key, value: p.Value, accepted: accepted} }
	switch p.Key {
	case keyDriver:
		return nil // read first
	case keyName:
		if strings.IndexFunc(p.Value, unicode.IsControl) >= 0 {
			return bad("a name without control characters")
		}
		cfg.Name = p.Value
		return nil
	case keySeed:
		n, err := strconv.ParseUint(p.Value, 10, 64)
		if err != nil {
			return bad("an integer ≥ 0")
		}
		cfg.Seed = n
		return nil
	}
	i, suffix := lookupKey(p.Key)
	if i < 0 {
		return &dsnError{key: p.Key}
	}
	df := dsnFaults[i]
	if faults[i] == nil {
		faults[i] = &Fault{Name: df.name, Kind: df.kind, On: df.on}
	}
	f := faults[i]
	v := p.Value
	switch suffix {
	case "":
		return setMain(f, cfg, v, bad)
	case "_jitter":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return bad("a duration > 0 such as 10ms")
		}
		f.Jitter = d
	case "_rate":
		r, ok := parseRate(v)
		if !ok {
			return bad("a probability > 0 and ≤ 1, such as 0.25 or 25%")
		}
		f.Rate = r
	case "_every":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return bad("an integer ≥ 1")
		}
		f.Every = n
	case "_during":
		ws, ok := parseWindows(v)
		if !ok {
			return bad("windows FROM-TO[,FROM-TO...] of durations since the start, FROM < TO, TO may be empty (5s-10s,1m-)")
		}
		f.During = ws
	case "_on":
		ops, ok := parseOps(v)
		if !ok || ops&OpConnect != 0 {
			return bad("ops among exec, query, prepare, begin, commit, rollback, ping, reset, comma-separated")
		}
		f.On = ops
	case "_off":
		b, ok := dsnform.ParseBool(v)
		if !ok {
			return bad("true, false, on, off, 1 or 0")
		}
		f.Off = f.Off || b
	}
	return nil
}

// setMain stores the value of chaos_FAULT.
func setMain(f *Fault, cfg *Config, v string, bad func(string) error) error {
	switch f.Kind {
	case KindLatency:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return bad("a duration ≥ 0 such as 20ms")
		}
		f.Latency = d
	case KindError:
		err, ok := parseCode(v, flavorOfName(cfg.DriverName))
		if !ok {
			switch flavorOfName(cfg.DriverName) {
			case flavorPostgres:
				return bad("a SQLSTATE (five digits or upper-case letters, such as 40001), or mysql:NUMBER")
			case flavorMySQL:
				return bad("a MySQL error number (such as 1213), or pg:SQLSTATE")
			}
			return bad("pg:SQLSTATE or mysql:NUMBER (the driver " + dsnform.Quote(cfg.DriverName) + " is neither pgx nor mysql)")
		}
		f.Err = err
	case KindDrop:
		switch strings.ToLower(v) {
		case "before":
			f.AfterSend = false
		case "after":
			f.AfterSend = true
		default:
			return bad("before (nothing sent: driver.ErrBadConn) or after (sent, then the connection is lost)")
		}
	default: // KindRefuse, KindFreeze
		on, ok := dsnform.ParseBool(v)
		if !ok {
			return bad("true, false, on, off, 1 or 0")
		}
		f.Off = f.Off || !on
	}
	return nil
}

// lookupKey returns the index in dsnFaults of the Fault that key configures
// and its suffix, or -1.
func lookupKey(key string) (int, string) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return -1, ""
	}
	for i, df := range dsnFaults {
		suffix, ok := strings.CutPrefix(rest, df.name)
		if !ok || !slices.Contains(dsnSuffixes, suffix) {
			continue
		}
		switch {
		case suffix == "_jitter" && df.kind != KindLatency,
			suffix == "_on" && df.on == OpConnect:
			continue
		}
		return i, suffix
	}
	return -1, ""
}

func parseRate(v string) (float64, bool) {
	scale := 1.0
	if s, ok := strings.CutSuffix(v, "%"); ok {
		v, scale = s, 100
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	r /= scale
	return r, r > 0 && r <= 1
}

func parseWindows(v string) ([]Window, bool) {
	var ws []Window
	for part := range strings.SplitSeq(v, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(part), "-")
		if !ok {
			return nil, false
		}
		var w Window
		var err error
		if w.From, err = time.ParseDuration(from); err != nil || w.From < 0 {
			return nil, false
		}
		if to != "" {
			if w.To, err = time.ParseDuration(to); err != nil || w.To <= w.From {
				return nil, false
			}
		}
		ws = append(ws, w)
	}
	return ws, true
}
