package respool

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
)

// budgetOpeners are the openers of the schemes of respool_budget, by
// scheme (RegisterBudget).
var budgetOpeners sync.Map

// RegisterBudget makes respool_budget=SCHEME… (Config.SharedBudget) open a
// connection budget shared with other processes (a pool.Budget) with
// open, which is given the key's value and the DSN of the connections
// (respool's keys removed). The modules that hold the stores register
// theirs when imported, as database/sql drivers do:
//
//	import _ "github.com/respool/respool/redisbudget" // redis://, rediss://
//
// A scheme is what precedes "://" in the value, or else what precedes its
// first '?' (as in "db?max=200"). A Budget open returns is closed when the
// Connector is, after its pool, if it is an io.Closer. An error of open
// is returned by NewConnector (and sql.Open) with its passwords
// redacted. RegisterBudget panics if scheme is empty or registered
// already.
func RegisterBudget(scheme string, open func(spec, dsn string) (pool.Budget, error)) {
	if scheme == "" || open == nil {
		panic("respool: RegisterBudget: a scheme and an opener are required")
	}
	if _, dup := budgetOpeners.LoadOrStore(scheme, open); dup {
		panic("respool: RegisterBudget: scheme " + scheme + " registered twice")
	}
}

// budgetScheme returns the scheme of a respool_budget value.
func budgetScheme(spec string) string {
	if i := strings.Index(spec, "://"); i >= 0 {
		return spec[:i]
	}
	scheme, _, _ := strings.Cut(spec, "?")
	return scheme
}

// openBudget opens the Budget cfg.SharedBudget names; nil when it names
// none. The Budget, when it is an io.Closer, is closed with the Connector.
func openBudget(cfg *Config) (pool.Budget, error) {
	spec := cfg.SharedBudget
	if spec == "" {
		return nil, nil
	}
	if cfg.Pool.Budget != nil {
		return nil, fmt.Errorf("%w: SharedBudget (respool_budget) and Pool.Budget are both set: give one", ErrInvalidConfig)
	}
	scheme := budgetScheme(spec)
	open, ok := budgetOpeners.Load(scheme)
	if !ok {
		var known []string
		budgetOpeners.Range(func(k, _ any) bool { known = append(known, k.(string)); return true })
		sort.Strings(known)
		return nil, &DSNError{Key: dsnKeyBudget, Value: dsnform.RedactText(spec), Accepted: fmt.Sprintf(
			"a budget whose scheme is registered (%s): import github.com/respool/respool/redisbudget for redis:// and rediss://",
			cmp.Or(strings.Join(known, ", "), "none is"))}
	}
	b, err := open.(func(spec, dsn string) (pool.Budget, error))(spec, cfg.DSN)
	if err != nil {
		return nil, &budgetError{err: err}
	}
	return b, nil
}

// budgetError is an error of a Budget's opener, printed with its passwords
// redacted; errors.Is finds ErrInvalidConfig and the opener's error.
type budgetError struct{ err error }

func (e *budgetError) Error() string {
	return "respool: respool_budget: " + dsnform.RedactText(e.err.Error())
}
func (e *budgetError) Unwrap() []error { return []error{ErrInvalidConfig, e.err} }

// closeBudget closes b if it is an io.Closer.
func closeBudget(b pool.Budget) error {
	if c, ok := b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
