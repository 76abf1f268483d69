package chaos

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/respool/respool/clock"
)

// Config configures a Connector. The zero value of each field is its
// documented default; NewConnector checks a Config in one place.
type Config struct {
	// DriverName is the wrapped database/sql driver: "pgx", "mysql" or any
	// other registered name but "chaos". Required unless Connector is set.
	DriverName string
	// DSN is the wrapped driver's DSN, without chaos_ keys.
	DSN string
	// Connector, when set, is wrapped instead of DriverName and DSN. It
	// stays the caller's: Close does not close it.
	Connector driver.Connector
	// Name is the Connector's name for Lookup (chaos_name). Empty: Lookup
	// does not find it.
	Name string
	// Seed makes the Faults' random draws repeatable: two Connectors with
	// the same Seed and Faults hit the same calls (the n-th call a Fault
	// considers, whatever the goroutine making it). 0: a random seed,
	// which Connector.Stats tells (Stats.Seed), so that a failing run can
	// be repeated.
	Seed uint64
	// Faults are injected in this order of precedence: every KindLatency
	// that hits delays the call, then the first other Fault that hits ends
	// it. Every Fault counts and draws for each call it considers, whether
	// or not an earlier one ended the call, so that each keeps its own
	// schedule.
	Faults []Fault
	// Clock is read for During windows and sets Latency's timers; tests
	// move a clocktest.Clock instead of waiting. Nil: the system clock.
	Clock clock.Clock
	// OnFault, when set, is called in the calling goroutine each time a
	// Fault hits a call, before it takes effect: from several goroutines at
	// once when calls are made concurrently. It must not block.
	OnFault func(Event)
}

// Event tells OnFault that a Fault hit a call.
type Event struct {
	Fault string // the Fault's Name
	Kind  Kind
	Op    Op    // the call: one op
	N     int64 // the call's number among those the Fault considered, from 1
	// Delay is KindLatency's delay for this call.
	Delay time.Duration
}

// validate reports the first thing wrong with c as an error matching
// ErrInvalidConfig, naming the field, its value and what is accepted.
func (c *Config) validate() error {
	_, err := c.faults()
	if err != nil {
		return err
	}
	if c.Connector == nil {
		switch {
		case c.DriverName == "" || c.DriverName == driverName:
			return fmt.Errorf(`%w: DriverName %q: want a registered database/sql driver other than "chaos", or a Connector`,
				ErrInvalidConfig, c.DriverName)
		case !slices.Contains(sql.Drivers(), c.DriverName):
			return fmt.Errorf("%w: DriverName %q: not registered; registered: %s", ErrInvalidConfig, c.DriverName,
				strings.Join(wrappable(), ", "))
		}
	}
	if strings.IndexFunc(c.Name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: Name %q: want no control characters", ErrInvalidConfig, c.Name)
	}
	return nil
}

// faults returns c.Faults with their defaults filled in.
func (c *Config) faults() ([]Fault, error) {
	out := make([]Fault, len(c.Faults))
	for i, f := range c.Faults {
		var err error
		if out[i], err = f.normalize(); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out[:i], func(g Fault) bool { return g.Name == out[i].Name }) {
			return nil, fmt.Errorf("%w: two faults are named %q: give each a Name", ErrInvalidConfig, out[i].Name)
		}
	}
	return out, nil
}

// wrappable lists, quoted, the registered drivers chaos can wrap.
func wrappable() []string {
	var names []string
	for _, n := range sql.Drivers() {
		if n != driverName {
			names = append(names, fmt.Sprintf("%q", n))
		}
	}
	return names
}
