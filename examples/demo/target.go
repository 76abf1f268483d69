package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/respool/respool"
	_ "modernc.org/sqlite" // registers "sqlite"
)

// tableName is the demo's table; on a server given by DSN it is created and
// dropped again.
const tableName = "respool_demo"

// target is the database the demo runs on.
type target struct {
	what string // for the display: "embedded SQLite", "PostgreSQL (pgx)", …
	// dsn is the wrapped driver's DSN, to which the demo adds respool's and
	// chaos's keys.
	dsn string
	// driverKeys name the driver for respool and for chaos when the DSN's
	// form does not (SQLite's).
	respoolDriver, chaosDriver string
	// txConflict is chaos_error's value: the serialization failure the
	// database would send (SQLSTATE 40001, MySQL's deadlock 1213).
	txConflict string
	dollar     bool // placeholders are $1, $2 (pgx), not ?
	keyValue   bool // a libpq keyword=value DSN: keys are added as " key=value"
	cleanup    func() error
}

// newTarget returns the target for dsn: an embedded SQLite database in a
// temporary directory when dsn is empty.
func newTarget(dsn string) (*target, error) {
	if dsn == "" {
		dir, err := os.MkdirTemp("", "respool-demo-")
		if err != nil {
			return nil, err
		}
		// WAL lets readers run beside the writer; busy_timeout makes a
		// writer wait for the lock instead of failing; BEGIN IMMEDIATE takes
		// the write lock at the start of a transaction, so that two
		// transactions never deadlock upgrading their locks.
		file := filepath.ToSlash(filepath.Join(dir, "demo.db"))
		return &target{
			what:          "embedded SQLite (modernc.org/sqlite, " + file + ")",
			dsn:           "file:" + file + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate",
			respoolDriver: "sqlite",
			chaosDriver:   "sqlite",
			txConflict:    "pg:40001", // SQLite has no SQLSTATE: chaos makes PostgreSQL's error
			cleanup:       func() error { return os.RemoveAll(dir) },
		}, nil
	}
	cfg, err := respool.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	t := &target{dsn: dsn, cleanup: func() error { return nil }}
	switch cfg.DriverName {
	case "pgx":
		t.what, t.txConflict, t.dollar = "PostgreSQL (pgx)", "40001", true
		t.keyValue = !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://")
	case "mysql":
		t.what, t.txConflict = "MySQL (go-sql-driver/mysql)", "1213"
	default:
		return nil, fmt.Errorf("the demo runs on PostgreSQL (pgx) or MySQL, not on driver %q", cfg.DriverName)
	}
	return t, nil
}

// kv is one DSN key and its value.
type kv struct{ key, value string }

// withKeys returns t's DSN with keys added, in the DSN's own syntax.
func (t *target) withKeys(keys ...kv) string {
	var b strings.Builder
	b.WriteString(t.dsn)
	sep := "&"
	if !t.keyValue && !strings.Contains(t.dsn[strings.LastIndexByte(t.dsn, '/')+1:], "?") {
		sep = "?"
	}
	for _, k := range keys {
		if t.keyValue {
			sep = " "
		}
		b.WriteString(sep + k.key + "=" + k.value)
		sep = "&"
	}
	return b.String()
}

// respoolDSN returns the DSN of a respool pool on t, with the pool's keys.
func (t *target) respoolDSN(keys ...kv) string {
	if t.respoolDriver != "" {
		keys = append([]kv{{"respool_driver", t.respoolDriver}}, keys...)
	}
	return t.withKeys(keys...)
}

// chaosDSN returns the DSN of a respool pool on t through the chaos driver,
// with the pool's keys and chaos's.
func (t *target) chaosDSN(keys ...kv) string {
	all := []kv{{"respool_driver", "chaos"}}
	if t.chaosDriver != "" {
		all = append(all, kv{"chaos_driver", t.chaosDriver})
	}
	return t.withKeys(append(all, keys...)...)
}

// ph returns the i-th placeholder (from 1) in t's syntax.
func (t *target) ph(i int) string {
	if t.dollar {
		return "$" + strconv.Itoa(i)
	}
	return "?"
}
