package respool

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
)

// pgxpool's pool_ keys are refused where the DSN is read, naming the key
// and respool's key to use: pgx alone sends them to the server as run-time
// parameters, and the first connection failed with "unrecognized
// configuration parameter" (go-sql-driver/mysql: "Unknown system
// variable").
func TestPgxpoolKeysAreRefused(t *testing.T) {
	keys := map[string]string{
		"pool_max_conns":                "use respool_max_conns instead",
		"pool_min_conns":                "use respool_min_idle instead",
		"pool_min_idle_conns":           "use respool_min_idle instead",
		"pool_max_conn_lifetime":        "use respool_max_lifetime instead",
		"pool_max_conn_lifetime_jitter": "use respool_max_lifetime_jitter instead",
		"pool_max_conn_idle_time":       "use respool_max_idle_time instead",
		"pool_health_check_period":      "use respool_validation_interval instead",
		"pool_ping_timeout":             "use respool_test_timeout instead",
	}
	for key, use := range keys {
		for _, dsn := range []string{
			"postgres://app:" + pwMark + "@db/app?sslmode=disable&" + key + "=10",
			"host=db user=app password=" + pwMark + " " + key + "=10",
			"app:" + pwMark + "@tcp(db:3306)/app?" + strings.ToUpper(key) + "=10",
		} {
			check := func(what string, err error) {
				t.Helper()
				var de *DSNError
				if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &de) || !strings.EqualFold(de.Key, key) {
					t.Errorf("%s(%s): %v; want a *DSNError for %s", what, RedactDSN(dsn), err, key)
					return
				}
				if msg := err.Error(); !strings.Contains(strings.ToLower(msg), key) || !strings.Contains(msg, `(value "10")`) ||
					!strings.Contains(msg, use) || hasMark(msg) {
					t.Errorf("%s(%s): %q; want it to name %s and its value and say %s, without the password", what, RedactDSN(dsn), msg, key, use)
				}
			}
			_, err := ParseDSN(dsn)
			check("ParseDSN", err)
			_, err = sql.Open(driverName, dsn)
			check("sql.Open", err)
			cfg := Config{DriverName: "pgx", DSN: dsn}
			if strings.Contains(dsn, "@tcp(") {
				cfg.DriverName = "mysql"
			}
			_, err = NewConnector(cfg)
			check("NewConnector", err)
		}
	}
	// A key of the server's (or another pool's) that merely starts with
	// pool_ is the server's to judge.
	if _, err := ParseDSN("postgres://db/app?pool_mode=session"); err != nil {
		t.Errorf("ParseDSN with pool_mode: %v; want it passed to the driver", err)
	}
}
