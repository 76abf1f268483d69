package respool

import (
	"bytes"
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/retry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// dsnTestDriver is registered under dsnTestDriverName so that respool_driver
// can name a driver other than pgx and mysql.
type dsnTestDriver struct{}

func (dsnTestDriver) Open(string) (sqldriver.Conn, error) {
	return nil, errors.New("not a real driver")
}

const dsnTestDriverName = "respool-dsn-test"

func init() { sql.Register(dsnTestDriverName, dsnTestDriver{}) }

// dsnTestConnector is a driver.Connector for Config tests.
type dsnTestConnector struct{}

func (dsnTestConnector) Connect(context.Context) (sqldriver.Conn, error) {
	return nil, errors.New("not a real connector")
}
func (dsnTestConnector) Driver() sqldriver.Driver { return dsnTestDriver{} }

// parseDSNFormTests are DSNs of each form that ParseDSN accepts; the fuzz
// targets use them as seeds.
var parseDSNFormTests = []struct {
	name       string
	dsn        string
	wantDriver string
	wantDSN    string
	wantPool   pool.Config
	wantQuery  string
}{
	// URL form.
	{
		name:       "url",
		dsn:        "postgres://jack:secret@pg.example.com:5432/mydb?sslmode=verify-full&respool_max_conns=10&application_name=a%20b",
		wantDriver: "pgx",
		wantDSN:    "postgres://jack:secret@pg.example.com:5432/mydb?sslmode=verify-full&application_name=a%20b",
		wantPool:   pool.Config{MaxObjects: 10},
	},
	{
		name:       "url postgresql scheme, only respool keys",
		dsn:        "postgresql://u@h/db?respool_max_conns=2&respool_min_idle=1",
		wantDriver: "pgx",
		wantDSN:    "postgresql://u@h/db",
		wantPool:   pool.Config{MaxObjects: 2, MinIdle: 1},
	},
	{
		name:       "url without respool keys is unchanged",
		dsn:        "postgres://u:p@h:5432/db?sslmode=disable",
		wantDriver: "pgx",
		wantDSN:    "postgres://u:p@h:5432/db?sslmode=disable",
	},
	{
		name:       "url first key is respool",
		dsn:        "postgres://h/db?respool_max_queue=5&sslmode=disable&options=-c%20search_path%3Dx",
		wantDriver: "pgx",
		wantDSN:    "postgres://h/db?sslmode=disable&options=-c%20search_path%3Dx",
		wantPool:   pool.Config{MaxQueueSize: 5},
	},
	{
		name:       "url multiple hosts",
		dsn:        "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&respool_min_idle=2",
		wantDriver: "pgx",
		wantDSN:    "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
		wantPool:   pool.Config{MinIdle: 2},
	},
	{
		name:       "url ipv6 host",
		dsn:        "postgres://u:p@[::1]:5432/db?respool_max_conns=3",
		wantDriver: "pgx",
		wantDSN:    "postgres://u:p@[::1]:5432/db",
		wantPool:   pool.Config{MaxObjects: 3},
	},
	{
		name:       "url without path",
		dsn:        "postgres://h:5432?respool_max_conns=2&sslmode=disable",
		wantDriver: "pgx",
		wantDSN:    "postgres://h:5432?sslmode=disable",
		wantPool:   pool.Config{MaxObjects: 2},
	},
	{
		// libpq: the first '@' before any '/' ends the user
		// information, so '?', '&' and '=' may stay unescaped in it.
		name:       "url password with ? & = ' and quotes",
		dsn:        `postgres://u:p?a&b=c'"@h/db?respool_max_conns=4&x=1`,
		wantDriver: "pgx",
		wantDSN:    `postgres://u:p?a&b=c'"@h/db?x=1`,
		wantPool:   pool.Config{MaxObjects: 4},
	},
	{
		name:       "url password with escaped @ and /",
		dsn:        "postgres://u:p%40ss%2Fw@h/db?respool_leak_stack=true",
		wantDriver: "pgx",
		wantDSN:    "postgres://u:p%40ss%2Fw@h/db",
		wantPool:   pool.Config{LeakCaptureStack: true},
	},
	{
		name:       "url empty query loses its ?",
		dsn:        "postgres://h/db?",
		wantDriver: "pgx",
		wantDSN:    "postgres://h/db",
	},
	{
		name:       "url test query percent-decoded, + kept",
		dsn:        "postgres://h/db?respool_test_query=SELECT%201+1",
		wantDriver: "pgx",
		wantDSN:    "postgres://h/db",
		wantQuery:  "SELECT 1+1",
	},
	{
		name:       "url percent-encoded key",
		dsn:        "postgres://h/db?respool%5Fmax_conns=6",
		wantDriver: "pgx",
		wantDSN:    "postgres://h/db",
		wantPool:   pool.Config{MaxObjects: 6},
	},
	{
		name:       "url keeps empty segments and bare keys byte for byte",
		dsn:        "postgres://h/db?a=%7e&&b&respool_max_conns=2&c=d=e",
		wantDriver: "pgx",
		wantDSN:    "postgres://h/db?a=%7e&&b&c=d=e",
		wantPool:   pool.Config{MaxObjects: 2},
	},

	// Keyword/value form.
	{
		name:       "kv",
		dsn:        "host=localhost dbname=app user=u password='x y' respool_max_conns=5",
		wantDriver: "pgx",
		wantDSN:    "host=localhost dbname=app user=u password='x y'",
		wantPool:   pool.Config{MaxObjects: 5},
	},
	{
		name:       "kv respool key first and in the middle",
		dsn:        "respool_max_conns=5 host=h respool_min_idle=1  port=5432",
		wantDriver: "pgx",
		wantDSN:    "host=h  port=5432",
		wantPool:   pool.Config{MaxObjects: 5, MinIdle: 1},
	},
	{
		name:       "kv spaces around =",
		dsn:        "host = h respool_max_conns = 7 dbname=db",
		wantDriver: "pgx",
		wantDSN:    "host = h dbname=db",
		wantPool:   pool.Config{MaxObjects: 7},
	},
	{
		name:       "kv quoted respool value with escapes",
		dsn:        `host=h respool_test_query='SELECT \'a b\' AS \\x' dbname=db`,
		wantDriver: "pgx",
		wantDSN:    "host=h dbname=db",
		wantQuery:  `SELECT 'a b' AS \x`,
	},
	{
		name:       "kv unquoted value with escaped space",
		dsn:        `respool_test_query=SELECT\ 1 host=h`,
		wantDriver: "pgx",
		wantDSN:    "host=h",
		wantQuery:  "SELECT 1",
	},
	{
		name:       "kv password with quotes, @, ?, /, &, =",
		dsn:        `user=u password='p\'@?/&=\\x' respool_max_conns=3 host=h`,
		wantDriver: "pgx",
		wantDSN:    `user=u password='p\'@?/&=\\x' host=h`,
		wantPool:   pool.Config{MaxObjects: 3},
	},
	{
		name:       "kv several respool keys at the end",
		dsn:        "host=h password='a b' respool_max_conns=5\trespool_test_query='SELECT 1'  ",
		wantDriver: "pgx",
		wantDSN:    "host=h password='a b'",
		wantPool:   pool.Config{MaxObjects: 5},
		wantQuery:  "SELECT 1",
	},
	{
		name:       "kv escaped space before last respool key stays",
		dsn:        `password=a\  respool_max_conns=3`,
		wantDriver: "pgx",
		wantDSN:    `password=a\ `,
		wantPool:   pool.Config{MaxObjects: 3},
	},
	{
		name:       "kv value empty then respool-looking value is not a key",
		dsn:        "options= respool_max_conns=3",
		wantDriver: "pgx",
		wantDSN:    "options= respool_max_conns=3",
	},
	{
		name:       "kv only respool keys",
		dsn:        "  respool_max_conns=3 respool_leak_detection=off ",
		wantDriver: "pgx",
		wantDSN:    "",
		wantPool:   pool.Config{MaxObjects: 3, LeakTrackingDisabled: true},
	},
	{
		name:       "empty DSN",
		dsn:        "",
		wantDriver: "pgx",
		wantDSN:    "",
	},

	// mysql form.
	{
		name:       "mysql tcp",
		dsn:        "user:password@tcp(localhost:3306)/dbname?parseTime=true&respool_max_conns=8&loc=Local",
		wantDriver: "mysql",
		wantDSN:    "user:password@tcp(localhost:3306)/dbname?parseTime=true&loc=Local",
		wantPool:   pool.Config{MaxObjects: 8},
	},
	{
		name:       "mysql unix socket",
		dsn:        "user@unix(/var/run/mysqld/mysqld.sock)/db?respool_max_idle_time=none",
		wantDriver: "mysql",
		wantDSN:    "user@unix(/var/run/mysqld/mysqld.sock)/db",
		wantPool:   pool.Config{MaxIdle: -1},
	},
	{
		name:       "mysql no params",
		dsn:        "user:pw@tcp(h:3306)/db",
		wantDriver: "mysql",
		wantDSN:    "user:pw@tcp(h:3306)/db",
	},
	{
		name:       "mysql only respool params",
		dsn:        "user:pw@/db?respool_max_conns=2",
		wantDriver: "mysql",
		wantDSN:    "user:pw@/db",
		wantPool:   pool.Config{MaxObjects: 2},
	},
	{
		name:       "mysql minimal",
		dsn:        "/db?respool_max_conns=3",
		wantDriver: "mysql",
		wantDSN:    "/db",
		wantPool:   pool.Config{MaxObjects: 3},
	},
	{
		name:       "mysql password with @ ? / & = and quotes",
		dsn:        `u:p@ss?w/o&r=d'"@tcp(h)/db?respool_max_conns=2&x=1`,
		wantDriver: "mysql",
		wantDSN:    `u:p@ss?w/o&r=d'"@tcp(h)/db?x=1`,
		wantPool:   pool.Config{MaxObjects: 2},
	},
	{
		name:       "mysql test query: + is a space",
		dsn:        "u@tcp(h)/db?respool_test_query=SELECT+1%2B1",
		wantDriver: "mysql",
		wantDSN:    "u@tcp(h)/db",
		wantQuery:  "SELECT 1+1",
	},
	{
		name:       "mysql keeps other params byte for byte",
		dsn:        "u@tcp(h)/db?loc=Europe%2FParis&respool_max_queue=9&time_zone=%27%2B00%3A00%27&tls=skip-verify",
		wantDriver: "mysql",
		wantDSN:    "u@tcp(h)/db?loc=Europe%2FParis&time_zone=%27%2B00%3A00%27&tls=skip-verify",
		wantPool:   pool.Config{MaxQueueSize: 9},
	},

	// respool_driver.
	{
		name:       "driver override in mysql form (no slash)",
		dsn:        "file:app.db?mode=ro&respool_driver=" + dsnTestDriverName,
		wantDriver: dsnTestDriverName,
		wantDSN:    "file:app.db?mode=ro",
	},
	{
		name:       "driver override in kv form",
		dsn:        "respool_driver=" + dsnTestDriverName + " a=b",
		wantDriver: dsnTestDriverName,
		wantDSN:    "a=b",
	},
	{
		name:       "driver override to pgx and mysql needs no registration",
		dsn:        "h/db?respool_driver=pgx",
		wantDriver: "pgx",
		wantDSN:    "h/db",
	},
}

func TestParseDSNForms(t *testing.T) {
	for _, tt := range parseDSNFormTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseDSN(tt.dsn)
			if err != nil {
				t.Fatalf("ParseDSN: %v", err)
			}
			want := &Config{DriverName: tt.wantDriver, DSN: tt.wantDSN, Pool: tt.wantPool, TestQuery: tt.wantQuery}
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("ParseDSN(%q)\n got %#v\nwant %#v", tt.dsn, c, want)
			}
			checkRoundTrip(t, tt.dsn)
		})
	}
}

// checkRoundTrip checks that dsn, once parsed, formats to a DSN that parses
// to the same Config and formats to itself.
func checkRoundTrip(t *testing.T, dsn string) {
	t.Helper()
	c1, err := ParseDSN(dsn)
	if err != nil {
		return
	}
	f1 := c1.FormatDSN()
	c2, err := ParseDSN(f1)
	if err != nil {
		t.Fatalf("ParseDSN(FormatDSN()) of %q: FormatDSN = %q: %v", dsn, f1, err)
	}
	if !reflect.DeepEqual(c1, c2) {
		t.Fatalf("round trip of %q through %q:\n got %#v\nwant %#v", dsn, f1, c2, c1)
	}
	if f2 := c2.FormatDSN(); f2 != f1 {
		t.Fatalf("FormatDSN not idempotent for %q: %q then %q", dsn, f1, f2)
	}
}

func TestParseDSNKeys(t *testing.T) {
	tests := []struct {
		kv   string // key=value, in URL form
		want Config
	}{
		{"respool_max_conns=12", Config{Pool: pool.Config{MaxObjects: 12}}},
		{"respool_min_idle=0", Config{}},
		{"respool_min_idle=3", Config{Pool: pool.Config{MinIdle: 3}}},
		{"respool_max_idle_time=5m", Config{Pool: pool.Config{MaxIdle: 5 * time.Minute}}},
		{"respool_max_idle_time=none", Config{Pool: pool.Config{MaxIdle: -1}}},
		{"respool_max_idle_time=NONE", Config{Pool: pool.Config{MaxIdle: -1}}},
		{"respool_max_lifetime=1h30m", Config{Pool: pool.Config{MaxLifetime: 90 * time.Minute}}},
		{"respool_max_lifetime=0", Config{}},
		{"respool_max_lifetime_jitter=1m", Config{Pool: pool.Config{MaxLifetimeJitter: time.Minute}}},
		{"respool_max_queue=1", Config{Pool: pool.Config{MaxQueueSize: 1}}},
		{"respool_max_concurrent_creates=2", Config{Pool: pool.Config{MaxConcurrentCreates: 2}}},
		{"respool_acquire_timeout=2s", Config{Pool: pool.Config{AcquireTimeout: 2 * time.Second}}},
		{"respool_acquire_timeout=0", Config{}},
		{"respool_create_timeout=3s", Config{Pool: pool.Config{CreateTimeout: 3 * time.Second}}},
		{"respool_test_timeout=500ms", Config{Pool: pool.Config{TestTimeout: 500 * time.Millisecond}}},
		{"respool_validation_interval=1m", Config{Pool: pool.Config{ValidationInterval: time.Minute}}},
		{"respool_leak_detection=false", Config{Pool: pool.Config{LeakTrackingDisabled: true}}},
		{"respool_leak_detection=OFF", Config{Pool: pool.Config{LeakTrackingDisabled: true}}},
		{"respool_leak_detection=0", Config{Pool: pool.Config{LeakTrackingDisabled: true}}},
		{"respool_leak_detection=true", Config{}},
		{"respool_leak_detection=on", Config{}},
		{"respool_leak_stack=1", Config{Pool: pool.Config{LeakCaptureStack: true}}},
		{"respool_leak_stack=off", Config{}},
		{"respool_leak_threshold=30s", Config{Pool: pool.Config{HoldThreshold: 30 * time.Second}}},
		{"respool_leak_threshold=off", Config{Pool: pool.Config{HoldThreshold: -1}}},
		{"respool_leak_threshold=OFF", Config{Pool: pool.Config{HoldThreshold: -1}}},
		{"respool_create_backoff=100ms", Config{Pool: pool.Config{BackoffInitial: 100 * time.Millisecond}}},
		{"respool_create_backoff=off", Config{Pool: pool.Config{BackoffDisabled: true}}},
		{"respool_create_backoff=Off", Config{Pool: pool.Config{BackoffDisabled: true}}},
		{"respool_create_backoff_max=5s", Config{Pool: pool.Config{BackoffMax: 5 * time.Second}}},
		{"respool_create_backoff=1s&respool_create_backoff_max=1s",
			Config{Pool: pool.Config{BackoffInitial: time.Second, BackoffMax: time.Second}}},
		{"respool_overload=deadline", Config{}},
		{"respool_overload=CoDel", Config{Pool: pool.Config{Overload: pool.OverloadCoDel}}},
		{"respool_overload=fifo", Config{Pool: pool.Config{Overload: pool.OverloadFIFO}}},
		{"respool_back_pressure=off", Config{BackPressureDisabled: true}},
		{"respool_back_pressure=on", Config{}},
		{"respool_breaker=false", Config{Resilience: dbguard.Config{BreakerDisabled: true}}},
		{"respool_breaker=1", Config{}},
		{"respool_breaker_window=50&respool_breaker_min_calls=50",
			Config{Resilience: dbguard.Config{Breaker: breaker.Config{WindowSize: 50, MinimumCalls: 50}}}},
		{"respool_breaker_min_calls=20", Config{Resilience: dbguard.Config{Breaker: breaker.Config{MinimumCalls: 20}}}},
		{"respool_breaker_failure_rate=0.25", Config{Resilience: dbguard.Config{Breaker: breaker.Config{FailureRate: 0.25}}}},
		{"respool_breaker_failure_rate=1", Config{Resilience: dbguard.Config{Breaker: breaker.Config{FailureRate: 1}}}},
		{"respool_breaker_open_delay=1s", Config{Resilience: dbguard.Config{Breaker: breaker.Config{OpenDelay: presetDelay(time.Second, time.Second)}}}},
		{"respool_breaker_max_open_delay=30s", Config{Resilience: dbguard.Config{Breaker: breaker.Config{OpenDelay: presetDelay(220*time.Millisecond, 30*time.Second)}}}},
		{"respool_breaker_max_open_delay=500ms&respool_breaker_open_delay=1s",
			Config{Resilience: dbguard.Config{Breaker: breaker.Config{OpenDelay: presetDelay(time.Second, time.Second)}}}},
		{"respool_breaker_slow_call=5s", Config{Resilience: dbguard.Config{Breaker: breaker.Config{SlowCallDuration: 5 * time.Second}}}},
		{"respool_breaker_slow_call=off", Config{}},
		{"respool_retry_connect=1", Config{Resilience: dbguard.Config{Retry: retry.Config[struct{}]{MaxAttempts: 1}}}},
		{"respool_retry_connect=5", Config{Resilience: dbguard.Config{Retry: retry.Config[struct{}]{MaxAttempts: 5}}}},
		{"respool_connect_rate=20", Config{Resilience: dbguard.Config{ConnectRate: 20}}},
		{"respool_connect_rate=OFF", Config{}},
		{"respool_pause=off", Config{Resilience: dbguard.Config{PauseDisabled: true}}},
		{"respool_max_pause=1m", Config{Resilience: dbguard.Config{Pause: pause.Config{MaxPause: time.Minute}}}},
		{"respool_log=debug", Config{LogLevel: slog.LevelDebug}},
		{"respool_log=Off", Config{LogLevel: logOff}},
		{"respool_close_timeout=2s", Config{CloseTimeout: 2 * time.Second}},
		{"respool_close_timeout=0", Config{}},
		{"respool_cancel_wait=250ms", Config{CancelWait: 250 * time.Millisecond}},
		{"respool_cancel_wait=off", Config{CancelWait: -1}},
		{"respool_session_end_wait=2s", Config{SessionEndWait: 2 * time.Second}},
		{"respool_session_end_wait=OFF", Config{SessionEndWait: -1}},
		{"respool_test_query=SELECT%201", Config{TestQuery: "SELECT 1"}},
		{"respool_init_sql=SET%20a%20%3D%201", Config{InitSQL: []string{"SET a = 1"}}},
		{"respool_init_sql=SET%20a&respool_max_conns=2&respool_init_sql=SET%20b",
			Config{InitSQL: []string{"SET a", "SET b"}, Pool: pool.Config{MaxObjects: 2}}},
		{"respool_test_query=", Config{}},
		{"respool_test_query", Config{}},
		{"respool_max_idle_time=1%6D", Config{Pool: pool.Config{MaxIdle: time.Minute}}},
		{"respool_name=orders", Config{Pool: pool.Config{Name: "orders"}}},
		{"respool_name=orders%20db%C3%A9", Config{Pool: pool.Config{Name: "orders dbé"}}},
		{"respool_name=", Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.kv, func(t *testing.T) {
			c, err := ParseDSN("postgres://h/db?" + tt.kv)
			if err != nil {
				t.Fatalf("ParseDSN: %v", err)
			}
			want := tt.want
			want.DriverName, want.DSN = "pgx", "postgres://h/db"
			if !reflect.DeepEqual(*c, want) {
				t.Fatalf("got %#v\nwant %#v", *c, want)
			}
		})
	}
}

// parseDSNBadValueTests are DSNs with a bad respool value and the
// *DSNError they give.
var parseDSNBadValueTests = []struct {
	dsn      string
	key      string
	value    string
	accepted string // a part of DSNError.Accepted
}{
	{"postgres://h/db?respool_max_conns=abc", "respool_max_conns", "abc", "an integer ≥ 1"},
	{"postgres://h/db?respool_max_conns=0", "respool_max_conns", "0", "an integer ≥ 1"},
	{"postgres://h/db?respool_max_conns=-1", "respool_max_conns", "-1", "an integer ≥ 1"},
	{"postgres://h/db?respool_max_conns=1.5", "respool_max_conns", "1.5", "an integer ≥ 1"},
	{"postgres://h/db?respool_max_conns=99999999999999999999", "respool_max_conns", "99999999999999999999", "an integer ≥ 1"},
	{"postgres://h/db?respool_max_conns", "respool_max_conns", "", "an integer ≥ 1"},
	{"postgres://h/db?respool_min_idle=-1", "respool_min_idle", "-1", "an integer ≥ 0"},
	{"postgres://h/db?respool_max_conns=2&respool_min_idle=3", "respool_min_idle", "3", "≤ respool_max_conns 2"},
	{"postgres://h/db?respool_min_idle=3&respool_max_conns=2", "respool_min_idle", "3", "≤ respool_max_conns 2"},
	{"postgres://h/db?respool_min_idle=1000000", "respool_min_idle", "1000000", "whose default on this machine is"},
	{"postgres://h/db?respool_max_idle_time=-5s", "respool_max_idle_time", "-5s", "a duration > 0"},
	{"postgres://h/db?respool_max_idle_time=5", "respool_max_idle_time", "5", "a duration > 0"},
	{"postgres://h/db?respool_max_lifetime=forever", "respool_max_lifetime", "forever", "a duration > 0"},
	{"postgres://h/db?respool_max_lifetime=-1h", "respool_max_lifetime", "-1h", "a duration > 0"},
	{"postgres://h/db?respool_max_lifetime_jitter=1x", "respool_max_lifetime_jitter", "1x", "a duration > 0"},
	{"postgres://h/db?respool_max_queue=0", "respool_max_queue", "0", "an integer ≥ 1"},
	{"postgres://h/db?respool_max_concurrent_creates=none", "respool_max_concurrent_creates", "none", "an integer ≥ 1"},
	{"postgres://h/db?respool_acquire_timeout=-1s", "respool_acquire_timeout", "-1s", "a duration > 0"},
	{"postgres://h/db?respool_acquire_timeout=2", "respool_acquire_timeout", "2", "a duration > 0"},
	{"postgres://h/db?respool_create_timeout=0s", "respool_create_timeout", "0s", "a duration > 0"},
	{"postgres://h/db?respool_test_timeout=-1s", "respool_test_timeout", "-1s", "a duration > 0"},
	{"postgres://h/db?respool_validation_interval=soon", "respool_validation_interval", "soon", "a duration > 0"},
	{"postgres://h/db?respool_leak_detection=yes", "respool_leak_detection", "yes", "true, false, on, off, 1 or 0"},
	{"postgres://h/db?respool_leak_stack=", "respool_leak_stack", "", "true, false, on, off, 1 or 0"},
	{"postgres://h/db?respool_leak_threshold=-1s", "respool_leak_threshold", "-1s", "a duration > 0"},
	{"postgres://h/db?respool_close_timeout=-1s", "respool_close_timeout", "-1s", "a duration > 0"},
	{"postgres://h/db?respool_session_end_wait=-1s", "respool_session_end_wait", "-1s", "a duration > 0"},
	{"postgres://h/db?respool_create_backoff_max=10ms", "respool_create_backoff_max", "10ms", "≥ respool_create_backoff, whose default is 50ms"},
	{"postgres://h/db?respool_create_backoff=2s&respool_create_backoff_max=1s", "respool_create_backoff_max", "1s", "≥ respool_create_backoff 2s"},
	{"postgres://h/db?respool_overload=lifo", "respool_overload", "lifo", "deadline, codel or fifo"},
	{"postgres://h/db?respool_overload=", "respool_overload", "", "deadline, codel or fifo"},
	{"postgres://h/db?respool_back_pressure=no", "respool_back_pressure", "no", "true, false, on, off, 1 or 0"},
	{"postgres://h/db?respool_breaker=maybe", "respool_breaker", "maybe", "true, false, on, off, 1 or 0"},
	{"postgres://h/db?respool_breaker_window=0", "respool_breaker_window", "0", "an integer ≥ 1"},
	{"postgres://h/db?respool_breaker_min_calls=21", "respool_breaker_min_calls", "21", "≤ respool_breaker_window, whose default is 20"},
	{"postgres://h/db?respool_breaker_window=5&respool_breaker_min_calls=6", "respool_breaker_min_calls", "6", "≤ respool_breaker_window 5"},
	{"postgres://h/db?respool_breaker_failure_rate=0", "respool_breaker_failure_rate", "0", "a number > 0 and ≤ 1"},
	{"postgres://h/db?respool_breaker_failure_rate=1.5", "respool_breaker_failure_rate", "1.5", "a number > 0 and ≤ 1"},
	{"postgres://h/db?respool_breaker_failure_rate=NaN", "respool_breaker_failure_rate", "NaN", "a number > 0 and ≤ 1"},
	{"postgres://h/db?respool_breaker_failure_rate=50%25", "respool_breaker_failure_rate", "50%", "a number > 0 and ≤ 1"},
	{"postgres://h/db?respool_breaker_open_delay=0s", "respool_breaker_open_delay", "0s", "a duration > 0"},
	{"postgres://h/db?respool_retry_connect=0", "respool_retry_connect", "0", "an integer ≥ 1 (1: no retry)"},
	{"postgres://h/db?respool_connect_rate=2.5", "respool_connect_rate", "2.5", "an integer ≥ 1"},
	{"postgres://h/db?respool_pause=paused", "respool_pause", "paused", "true, false, on, off, 1 or 0"},
	{"postgres://h/db?respool_max_pause=-1s", "respool_max_pause", "-1s", "a duration > 0"},
	{"postgres://h/db?respool_close_timeout=soon", "respool_close_timeout", "soon", "a duration > 0"},
	{"postgres://h/db?respool_init_sql=", "respool_init_sql", "", "one SQL statement, not empty"},
	{"postgres://h/db?respool_init_sql=SET%20a&respool_init_sql=%20", "respool_init_sql", " ", "one SQL statement"},
	{"postgres://h/db?respool_test_query=%zz", "respool_test_query", "%zz", "percent-encoded"},
	{"postgres://h/db?respool_max_conns=%", "respool_max_conns", "%", "percent-encoded"},
	{"postgres://h/db?respool_name=a%0Ab", "respool_name", "a\nb", "without control characters"},
	{"host=h respool_name='a\tb'", "respool_name", "a\tb", "without control characters"},
	{"postgres://h/db?respool_driver=", "respool_driver", "", "driver name"},
	{"postgres://h/db?respool_driver=respool", "respool_driver", "respool", `other than "respool"`},
	{"postgres://h/db?respool_driver=nosuchdriver", "respool_driver", "nosuchdriver", `"mysql", "pgx"`},
	{"u@tcp(h)/db?respool_max_conns=ten", "respool_max_conns", "ten", "an integer ≥ 1"},
	{"u@tcp(h)/db?respool_max_lifetime=1+h", "respool_max_lifetime", "1 h", "a duration > 0"},
	{"host=h respool_max_conns='1 0'", "respool_max_conns", "1 0", "an integer ≥ 1"},
	{"host=h respool_leak_stack=maybe", "respool_leak_stack", "maybe", "true, false"},
}

func TestParseDSNBadValues(t *testing.T) {
	for _, tt := range parseDSNBadValueTests {
		t.Run(tt.dsn, func(t *testing.T) {
			_, err := ParseDSN(tt.dsn)
			var de *DSNError
			if !errors.As(err, &de) {
				t.Fatalf("ParseDSN: got %v, want a *DSNError", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false", err)
			}
			if de.Key != tt.key || de.Value != tt.value || !strings.Contains(de.Accepted, tt.accepted) {
				t.Errorf("got %+v, want Key %q Value %q Accepted containing %q", de, tt.key, tt.value, tt.accepted)
			}
			msg := err.Error()
			for _, part := range []string{fmt.Sprintf("%q", tt.key), fmt.Sprintf("%q", tt.value), tt.accepted} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q does not contain %q", msg, part)
				}
			}
		})
	}
}

func TestParseDSNErrorMessage(t *testing.T) {
	_, err := ParseDSN("postgres://u:pw@h/db?respool_max_conns=abc")
	want := `respool: DSN key "respool_max_conns" has invalid value "abc": want an integer ≥ 1`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestParseDSNUnknownKey(t *testing.T) {
	tests := []struct {
		dsn        string
		key        string
		suggestion string
		msg        string
	}{
		{
			dsn:        "postgres://h/db?respool_max_con=5",
			key:        "respool_max_con",
			suggestion: "respool_max_conns",
			msg:        `respool: unknown DSN key "respool_max_con" (did you mean "respool_max_conns"?)`,
		},
		{dsn: "postgres://h/db?respool_max_connections=5", key: "respool_max_connections", suggestion: "respool_max_conns"},
		{dsn: "u@tcp(h)/db?RESPOOL_MAX_CONNS=5", key: "RESPOOL_MAX_CONNS", suggestion: "respool_max_conns"},
		{dsn: "host=h Respool_Min_Idle=1", key: "Respool_Min_Idle", suggestion: "respool_min_idle"},
		{dsn: "host=h respool_leak_treshold=1s", key: "respool_leak_treshold", suggestion: "respool_leak_threshold"},
		{dsn: "u@tcp(h)/db?respool_idle_timeout=1m", key: "respool_idle_timeout", suggestion: "respool_max_idle_time"},
		{dsn: "postgres://h/db?respool_pool_max_conn_lifetime=1h", key: "respool_pool_max_conn_lifetime", suggestion: "respool_max_lifetime"},
		{dsn: "postgres://h/db?respool_timeout=1s", key: "respool_timeout"},
		{
			dsn: "postgres://h/db?respool_colour=blue",
			key: "respool_colour",
			msg: `respool: unknown DSN key "respool_colour"; valid keys: respool_driver, respool_name, respool_max_conns, respool_min_idle,`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			_, err := ParseDSN(tt.dsn)
			var de *DSNError
			if !errors.As(err, &de) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("ParseDSN: got %v, want a *DSNError", err)
			}
			if de.Key != tt.key || de.Suggestion != tt.suggestion || de.Accepted != "" || de.Duplicate {
				t.Errorf("got %+v, want Key %q Suggestion %q", de, tt.key, tt.suggestion)
			}
			if tt.msg != "" && !strings.HasPrefix(err.Error(), tt.msg) {
				t.Errorf("got %q, want it to start with %q", err, tt.msg)
			}
			if tt.suggestion == "" {
				for _, k := range dsnKeyNames() {
					if !strings.Contains(err.Error(), k) {
						t.Errorf("error %q does not list %q", err, k)
					}
				}
			}
		})
	}
}

func TestParseDSNDuplicateKey(t *testing.T) {
	for _, dsn := range []string{
		"postgres://h/db?respool_max_conns=5&respool_max_conns=6",
		"host=h respool_max_conns=5 respool_max_conns=5",
		"u@tcp(h)/db?respool_test_query=a&x=1&respool_test_query=b",
		"u@tcp(h)/db?respool_max_conns=5&respool%5Fmax_conns=6",
	} {
		_, err := ParseDSN(dsn)
		var de *DSNError
		if !errors.As(err, &de) || !de.Duplicate || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseDSN(%q): got %v, want a duplicate *DSNError", dsn, err)
			continue
		}
		if !strings.Contains(err.Error(), "more than once") {
			t.Errorf("ParseDSN(%q): message %q", dsn, err)
		}
	}
}

func TestParseDSNMalformed(t *testing.T) {
	for _, dsn := range []string{
		"host=h password='secret",                           // unterminated quote
		"host=h password=secret garbage",                    // element without '='
		"host=h =x",                                         // empty keyword
		"postgres://u:secret@[::1/db?respool_max_conns=1",   // unterminated [
		"postgres://u:secret@[::1]x/db?respool_max_conns=1", // byte after ]
		`respool_test_query='SELECT 1`,
	} {
		_, err := ParseDSN(dsn)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseDSN(%q): got %v, want ErrInvalidConfig", dsn, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "garbage") {
			t.Errorf("ParseDSN(%q): error %q shows the DSN", dsn, err)
		}
	}
}

func TestParseDSNErrorsHideThePassword(t *testing.T) {
	const pw = "Sup3rS3cret"
	for _, dsn := range []string{
		"postgres://u:" + pw + "@h/db?respool_max_conns=x",
		"postgres://u:" + pw + "@h/db?respool_nope=1",
		"postgres://u@h/db?password=" + pw + "&respool_max_conns=x",
		"host=h password=" + pw + " respool_max_conns=x",
		"host=h password='" + pw + " x' respool_max_conns=x",
		"host=h password='" + pw,
		"u:" + pw + "@tcp(h)/db?respool_max_conns=x",
		"u:" + pw + "@tcp(h)/db?respool_max_conns=1&respool_max_conns=1",
		"u:" + pw + "@tcp(h)/db?respool_driver=nosuch",
	} {
		_, err := ParseDSN(dsn)
		if err == nil {
			t.Errorf("ParseDSN(%q) = nil error", dsn)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), dsn) {
			t.Errorf("ParseDSN(%q): error %q shows the password", dsn, err)
		}
	}
}

func TestFormatDSN(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "url canonical order",
			cfg: Config{DriverName: "pgx", DSN: "postgres://u:p@h/db?sslmode=disable", TestQuery: "SELECT 1",
				Pool: pool.Config{
					MaxObjects: 10, MinIdle: 2, MaxIdle: -1, MaxLifetime: time.Hour, MaxLifetimeJitter: time.Minute,
					MaxQueueSize: 100, AcquireTimeout: 3 * time.Second, MaxConcurrentCreates: 3, CreateTimeout: 2 * time.Second,
					TestTimeout: time.Second, ValidationInterval: 15 * time.Second,
					LeakTrackingDisabled: true, LeakCaptureStack: true, HoldThreshold: 90 * time.Second,
				}},
			want: "postgres://u:p@h/db?sslmode=disable&respool_max_conns=10&respool_min_idle=2" +
				"&respool_max_idle_time=off&respool_max_lifetime=1h0m0s&respool_max_lifetime_jitter=1m0s" +
				"&respool_max_queue=100&respool_acquire_timeout=3s&respool_max_concurrent_creates=3&respool_create_timeout=2s" +
				"&respool_test_timeout=1s&respool_validation_interval=15s&respool_test_query=SELECT%201" +
				"&respool_leak_detection=false&respool_leak_stack=true&respool_leak_threshold=1m30s",
		},
		{
			name: "resilience, canonical order",
			cfg: Config{DriverName: "pgx", DSN: "postgres://h/db",
				Pool: pool.Config{BackoffInitial: 100 * time.Millisecond, BackoffMax: 2 * time.Second,
					Overload: pool.OverloadCoDel},
				BackPressureDisabled: true,
				Resilience: dbguard.Config{ConnectRate: 50,
					Breaker: breaker.Config{WindowSize: 40, MinimumCalls: 30, FailureRate: 0.75,
						OpenDelay: presetDelay(time.Second, 8*time.Second), SlowCallDuration: 3 * time.Second},
					Retry: retry.Config[struct{}]{MaxAttempts: 2}, Pause: pause.Config{MaxPause: time.Minute}}},
			want: "postgres://h/db?respool_create_backoff=100ms&respool_create_backoff_max=2s&respool_overload=codel" +
				"&respool_back_pressure=false&respool_breaker_window=40&respool_breaker_min_calls=30" +
				"&respool_breaker_failure_rate=0.75&respool_breaker_open_delay=1s&respool_breaker_max_open_delay=8s" +
				"&respool_breaker_slow_call=3s&respool_retry_connect=2&respool_connect_rate=50&respool_max_pause=1m0s",
		},
		{
			name: "resilience off",
			cfg: Config{DriverName: "mysql", DSN: "u@tcp(h)/db",
				Pool:                 pool.Config{BackoffDisabled: true, Overload: pool.OverloadFIFO},
				BackPressureDisabled: true,
				Resilience: dbguard.Config{BreakerDisabled: true,
					Retry: retry.Config[struct{}]{MaxAttempts: 1}, PauseDisabled: true}},
			want: "u@tcp(h)/db?respool_create_backoff=off&respool_overload=fifo&respool_back_pressure=false" +
				"&respool_breaker=false&respool_retry_connect=1&respool_pause=false",
		},
		{
			name: "hold-time report off, close timeout",
			cfg: Config{DriverName: "pgx", DSN: "postgres://h/db", CloseTimeout: 3 * time.Second,
				Pool: pool.Config{HoldThreshold: -1}},
			want: "postgres://h/db?respool_close_timeout=3s&respool_leak_threshold=off",
		},
		{
			name: "init SQL, one key per statement",
			cfg:  Config{DriverName: "pgx", DSN: "host=h", InitSQL: []string{"SET a = 'x'", "SET b"}},
			want: `respool_init_sql='SET a = \'x\'' respool_init_sql='SET b' host=h`,
		},
		{
			name: "init SQL in the URL form",
			cfg:  Config{DriverName: "pgx", DSN: "postgres://h/db", InitSQL: []string{"SET a = 1", "SET b"}},
			want: "postgres://h/db?respool_init_sql=SET%20a%20%3D%201&respool_init_sql=SET%20b",
		},
		{
			name: "name first, quoted in the kv form",
			cfg:  Config{DriverName: "pgx", DSN: "host=h", Pool: pool.Config{Name: "orders db", MaxObjects: 2}},
			want: `respool_name='orders db' respool_max_conns=2 host=h`,
		},
		{
			name: "name percent-encoded in the URL form",
			cfg:  Config{DriverName: "pgx", DSN: "postgres://h/db", Pool: pool.Config{Name: "a&b=c"}},
			want: "postgres://h/db?respool_name=a%26b%3Dc",
		},
		{
			name: "zero pool config adds nothing",
			cfg:  Config{DriverName: "pgx", DSN: "postgres://h/db"},
			want: "postgres://h/db",
		},
		{
			name: "url without query",
			cfg:  Config{DriverName: "pgx", DSN: "postgres://h/db", Pool: pool.Config{MaxObjects: 3}},
			want: "postgres://h/db?respool_max_conns=3",
		},
		{
			name: "mysql",
			cfg:  Config{DriverName: "mysql", DSN: "u:p@tcp(h:3306)/db?parseTime=true", Pool: pool.Config{MaxIdle: 90 * time.Second}},
			want: "u:p@tcp(h:3306)/db?parseTime=true&respool_max_idle_time=1m30s",
		},
		{
			name: "mysql test query escaped",
			cfg:  Config{DriverName: "mysql", DSN: "u@/db", TestQuery: "SELECT 1+1 /* a&b=c? */"},
			want: "u@/db?respool_test_query=SELECT%201%2B1%20%2F%2A%20a%26b%3Dc%3F%20%2A%2F",
		},
		{
			name: "kv keys go in front, values quoted",
			cfg:  Config{DriverName: "pgx", DSN: "host=h options=", TestQuery: "SELECT 'x'", Pool: pool.Config{MaxObjects: 4}},
			want: `respool_max_conns=4 respool_test_query='SELECT \'x\'' host=h options=`,
		},
		{
			name: "empty DSN",
			cfg:  Config{DriverName: "pgx", Pool: pool.Config{MaxObjects: 4}},
			want: "respool_max_conns=4",
		},
		{
			name: "empty DSN, mysql driver",
			cfg:  Config{DriverName: "mysql"},
			want: "respool_driver=mysql",
		},
		{
			name: "other driver",
			cfg:  Config{DriverName: "sqlite3", DSN: "file:app.db?mode=ro", Pool: pool.Config{MaxObjects: 1}},
			want: "file:app.db?mode=ro&respool_driver=sqlite3&respool_max_conns=1",
		},
		{
			name: "pgx on a mysql-form DSN",
			cfg:  Config{DriverName: "pgx", DSN: "u@tcp(h)/db"},
			want: "u@tcp(h)/db?respool_driver=pgx",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.FormatDSN(); got != tt.want {
				t.Fatalf("FormatDSN()\n got %q\nwant %q", got, tt.want)
			}
			if tt.cfg.DriverName != "sqlite3" {
				c, err := ParseDSN(tt.want)
				if err != nil {
					t.Fatalf("ParseDSN(%q): %v", tt.want, err)
				}
				if !reflect.DeepEqual(*c, tt.cfg) {
					t.Fatalf("ParseDSN(%q)\n got %#v\nwant %#v", tt.want, *c, tt.cfg)
				}
			}
		})
	}
}

// roundTripEdgeCases are DSNs at the edges of the forms, where a careless
// FormatDSN would not read back.
var roundTripEdgeCases = []string{
	"  ",
	"  ?respool_driver=mysql",
	"?respool_max_conns=1",
	"respool_max_conns=5 x/y=1?",
	"respool_max_conns=5 x/y=a?b",
	"respool_driver=mysql respool_max_conns=2",
	"a=b?c&respool_max_conns=1",
	"postgres://h/db?a=1&",
	"postgres://h/db?&",
	"postgres://h/db?&respool_max_conns=2",
	"u@/db?a=1&&respool_max_conns=2",
	"host= respool_max_conns=1",
	`respool_test_query=a\`,
	"respool_max_lifetime=2562047h47m16.854775807s",
	"respool_test_query=µ\x00\xff",
	"respool_max_conns=5 postgres://x=1",
	"postgres://h/db?respool_init_sql=SET%20a%20%3D%201&respool_init_sql=SET+b&x=1",
	`respool_init_sql='SET a = 1' host=h respool_init_sql='SET b = \'x\''`,
	"u@tcp(h)/db?respool_init_sql=SET+@a%3D1&respool_init_sql=SET%20@b=2",
	"respool_leak_threshold=off respool_close_timeout=1m host=h",
	"postgres://h/db?respool_leak_threshold=Off&respool_max_idle_time=None",
	"postgres://h/db?respool_create_backoff=OFF&respool_overload=FIFO&respool_breaker=0&respool_pause=off",
	"respool_breaker_failure_rate=1e-3 respool_breaker_slow_call=off respool_connect_rate=off host=h",
	"u@tcp(h)/db?respool_breaker_failure_rate=.5&respool_create_backoff=1h&respool_create_backoff_max=2562047h47m16.854775807s",
	"postgres://h/db?respool_breaker_window=1&respool_breaker_min_calls=1&respool_retry_connect=9",
}

func TestRoundTripEdgeCases(t *testing.T) {
	for _, dsn := range roundTripEdgeCases {
		checkRoundTrip(t, dsn)
	}
}

// redactDSNTests hold DSNs whose password is "secret" (or holds it).
var redactDSNTests = []struct{ dsn, want string }{
	{"postgres://jack:secret@h:5432/db?sslmode=disable", "postgres://jack:xxxxx@h:5432/db?sslmode=disable"},
	{"postgresql://jack:secret@h/db", "postgresql://jack:xxxxx@h/db"},
	{"postgres://jack@h/db", "postgres://jack@h/db"},
	{"postgres://jack:@h/db", "postgres://jack:@h/db"},
	{"postgres://h/db?user=u&password=secret&respool_max_conns=2", "postgres://h/db?user=u&password=xxxxx&respool_max_conns=2"},
	{"postgres://h/db?sslpassword=secret", "postgres://h/db?sslpassword=xxxxx"},
	{`postgres://u:p?a&b=c'"@h/db?x=1`, "postgres://u:xxxxx@h/db?x=1"},
	{"postgres://u:se/cret@h/db", "postgres://u:xxxxx@h/db"},
	{"postgres://u:secret@[::1/db?password=secret", "postgres://u:xxxxx@[::1/db?password=xxxxx"},
	{"host=h user=u password=secret dbname=db", "host=h user=u password=xxxxx dbname=db"},
	{"host=h password='se cret' dbname=db", "host=h password=xxxxx dbname=db"},
	{`host=h password='se\'cret'`, "host=h password=xxxxx"},
	{"host=h password= dbname=db", "host=h password= xxxxx"}, // libpq: the password is "dbname=db"
	{"host=h password='' dbname=db", "host=h password=xxxxx dbname=db"},
	{"host=h sslpassword=s", "host=h sslpassword=xxxxx"},
	{"host=h password='unterminated secret", "host=h xxxxx"},
	{"host=h password=se cret", "host=h password=xxxxx xxxxx"},
	{"user:secret@tcp(localhost:3306)/db?parseTime=true", "user:xxxxx@tcp(localhost:3306)/db?parseTime=true"},
	{"user:p@ss?w/o&r=d@tcp(h)/db?x=1", "user:xxxxx@tcp(h)/db?x=1"},
	{"user:secret@unix(/tmp/mysql.sock)/db", "user:xxxxx@unix(/tmp/mysql.sock)/db"},
	{"user@tcp(h)/db", "user@tcp(h)/db"},
	{"user:secret@tcp(h)", "user:xxxxx@tcp(h)"},
	{"/db?respool_max_conns=3", "/db?respool_max_conns=3"},
	{"sqlserver://sa:secret@h:1433/inst?database=db", "sqlserver://sa:xxxxx@h:1433/inst?database=db"},
	{"clickhouse://u:secret@h:9000?password=other", "clickhouse://u:xxxxx@h:9000?password=xxxxx"},
	{"file:app.db?_auth_pass=secret&mode=ro", "file:app.db?_auth_pass=xxxxx&mode=ro"},
	{"", ""},
}

func TestRedactDSN(t *testing.T) {
	for _, tt := range redactDSNTests {
		if got := RedactDSN(tt.dsn); got != tt.want {
			t.Errorf("RedactDSN(%q)\n got %q\nwant %q", tt.dsn, got, tt.want)
		}
	}
}

func TestConfigStringHidesPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://jack:Sup3rS3cret@h/db?respool_max_conns=3",
		"postgres://h/db?password=Sup3rS3cret&respool_max_conns=3",
		"host=h password='Sup3rS3cret' respool_max_conns=3",
		"host=h password=Sup3rS3cret",
		"jack:Sup3rS3cret@tcp(h:3306)/db?respool_max_conns=3&respool_test_query=SELECT+1",
	} {
		c, err := ParseDSN(dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", dsn, err)
		}
		c.Pool.Name = "orders"
		s := c.String()
		if strings.Contains(s, "Sup3rS3cret") || !strings.Contains(s, "xxxxx") {
			t.Errorf("String() = %q", s)
		}
		if s2 := fmt.Sprint(c); s2 != s {
			t.Errorf("fmt.Sprint = %q, String = %q", s2, s)
		}
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("open", "config", c)
		if strings.Contains(buf.String(), "Sup3rS3cret") || !strings.Contains(buf.String(), "xxxxx") {
			t.Errorf("slog line %q", buf.String())
		}
	}
}

func TestConfigString(t *testing.T) {
	c := &Config{DriverName: "pgx", DSN: "postgres://u:pw@h/db", Pool: pool.Config{MaxObjects: 3, Name: "orders"}}
	want := `driver=pgx dsn="postgres://u:xxxxx@h/db?respool_name=orders&respool_max_conns=3"`
	if got := c.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	c = &Config{Connector: dsnTestConnector{}}
	if got, want := c.String(), `connector=respool.dsnTestConnector dsn=""`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if got := fmt.Sprint((*Config)(nil)); got != "<nil>" {
		t.Errorf("fmt.Sprint of a nil *Config = %q", got)
	}
}

func TestConfigLogValue(t *testing.T) {
	c := &Config{DriverName: "mysql", DSN: "u:pw@tcp(h)/db", TestQuery: "SELECT 1",
		Pool: pool.Config{MaxObjects: 3, MaxIdle: -1, CreateTimeout: time.Second, LeakTrackingDisabled: true}}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})).Info("open", "cfg", c)
	want := `level=INFO msg=open cfg.driver=mysql cfg.dsn=u:xxxxx@tcp(h)/db cfg.max_conns=3 cfg.max_idle_time=off ` +
		`cfg.create_timeout=1s cfg.test_query="SELECT 1" cfg.leak_detection=false` + "\n"
	if buf.String() != want {
		t.Errorf("got  %s\nwant %s", buf.String(), want)
	}
}

// TestNewConnectorChecksItsFields: NewConnector refuses a Config whose
// driver, connector or DSN it cannot use, with ErrInvalidConfig.
func TestNewConnectorChecksItsFields(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"driver and dsn", Config{DriverName: "pgx", DSN: "postgres://h/db"}, true},
		{"driver, empty dsn", Config{DriverName: "pgx"}, true},
		{"connector", Config{Connector: dsnTestConnector{}}, true},
		{"nothing", Config{}, false},
		{"dsn only", Config{DSN: "postgres://h/db"}, false},
		{"connector and dsn", Config{Connector: dsnTestConnector{}, DSN: "postgres://h/db"}, false},
		{"connector and driver", Config{Connector: dsnTestConnector{}, DriverName: "pgx"}, false},
		{"respool wraps itself", Config{DriverName: "respool", DSN: "x"}, false},
		{"dsn with respool key", Config{DriverName: "pgx", DSN: "postgres://h/db?respool_max_conns=3"}, false},
		{"dsn with respool key kv", Config{DriverName: "pgx", DSN: "host=h respool_max_conns=3"}, false},
		{"negative CloseTimeout", Config{Connector: dsnTestConnector{}, CloseTimeout: -time.Second}, false},
		{"empty InitSQL statement", Config{Connector: dsnTestConnector{}, InitSQL: []string{"SET a = 1", " "}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewConnector(tt.cfg)
			if tt.ok {
				if err != nil {
					t.Fatalf("NewConnector: %v", err)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if c != nil || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewConnector: got %v, %v, want ErrInvalidConfig", c, err)
			}
		})
	}
}

// A pool configuration is checked by NewConnector, which starts the pool:
// its error matches ErrInvalidConfig and names the field.
func TestNewConnectorRefusesAPoolConfig(t *testing.T) {
	for _, tt := range []struct {
		pc    pool.Config
		field string
	}{
		{pool.Config{MaxObjects: -1}, "MaxObjects"},
		{pool.Config{MinIdle: 5, MaxObjects: 2}, "MinIdle"},
	} {
		c, err := NewConnector(Config{Connector: dsnTestConnector{}, Pool: tt.pc})
		if err == nil {
			c.Close()
		}
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Mechanism != "pool" || ce.Field != tt.field || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewConnector(Pool %+v): got %v, want ErrInvalidConfig and a *resilience.ConfigError for the pool's %s",
				tt.pc, err, tt.field)
		}
	}
}

func TestDSNErrorIs(t *testing.T) {
	var err error = &DSNError{Key: "respool_max_conns", Value: "x", Accepted: "an integer ≥ 1"}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatal("DSNError must match ErrInvalidConfig: a DSN is configuration")
	}
	wrapped := fmt.Errorf("open: %w", err)
	var de *DSNError
	if !errors.As(wrapped, &de) || !errors.Is(wrapped, ErrInvalidConfig) {
		t.Fatal("wrapped DSNError lost")
	}
}

func TestDSNFormOf(t *testing.T) {
	tests := []struct {
		dsn  string
		want dsnform.Form
	}{
		{"postgres://h", dsnform.URL},
		{"postgresql://h", dsnform.URL},
		{"host=h", dsnform.KV},
		{"  host = h", dsnform.KV},
		{"search.path=x", dsnform.KV},
		{"", dsnform.KV},
		{" \t", dsnform.KV},
		{"u:p@tcp(h)/db", dsnform.MySQL},
		{"/db", dsnform.MySQL},
		{"u@/db?x=y", dsnform.MySQL},
		{"file:app.db", dsnform.MySQL},
		{"host h=1", dsnform.MySQL},
		{"Postgres://h", dsnform.MySQL},
	}
	for _, tt := range tests {
		if got := dsnform.Of(tt.dsn); got != tt.want {
			t.Errorf("dsnform.Of(%q) = %d, want %d", tt.dsn, got, tt.want)
		}
	}
}

// zeroPoolConfig is the Config in force of a pool made from a zero
// pool.Config: the pool's defaults.
func zeroPoolConfig(t *testing.T) pool.Config {
	t.Helper()
	p, err := pool.New(pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}, pool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p.Config()
}

// TestDSNPoolDefaultsAreThePools checks the pool's defaults that the DSN's
// checks name against those of a pool.
func TestDSNPoolDefaultsAreThePools(t *testing.T) {
	pc := zeroPoolConfig(t)
	if pc.MaxObjects != dsnPoolMaxObjects() || pc.BackoffInitial != dsnPoolBackoffInitial {
		t.Errorf("the pool's MaxObjects %d and BackoffInitial %v; the DSN's checks say %d and %v",
			pc.MaxObjects, pc.BackoffInitial, dsnPoolMaxObjects(), dsnPoolBackoffInitial)
	}
}

// TestDSNKeysDocumented checks that README.md has a row for every key, in
// canonical order, with the defaults of pool.Config.
func TestDSNKeysDocumented(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	var order []string
	for line := range strings.Lines(string(b)) {
		if cells := strings.Split(line, "|"); len(cells) > 3 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`respool_") {
			key := strings.Trim(strings.TrimSpace(cells[1]), "`")
			rows[key] = strings.TrimSpace(cells[3])
			order = append(order, key)
		}
	}
	if !slices.Equal(order, dsnKeyNames()) {
		t.Errorf("README.md rows\n %v\nwant (canonical order)\n %v", order, dsnKeyNames())
	}
	pc := zeroPoolConfig(t)
	defaults := map[string]string{
		"respool_max_queue":            strconv.Itoa(pc.MaxQueueSize),
		"respool_max_idle_time":        strings.TrimSuffix(pc.MaxIdle.String(), "0s"),
		"respool_create_timeout":       pc.CreateTimeout.String(),
		"respool_test_timeout":         pc.TestTimeout.String(),
		"respool_validation_interval":  pc.ValidationInterval.String(),
		"respool_max_conns":            "max(4, NumCPU)",
		"respool_min_idle":             "0",
		"respool_create_backoff":       pc.BackoffInitial.String(),
		"respool_create_backoff_max":   pc.BackoffMax.String(),
		"respool_overload":             pool.OverloadDeadline.String(),
		"respool_breaker_window":       strconv.Itoa(dbguard.BreakerPreset().WindowSize),
		"respool_breaker_min_calls":    strconv.Itoa(dbguard.BreakerPreset().MinimumCalls),
		"respool_breaker_failure_rate": strconv.FormatFloat(dbguard.BreakerPreset().FailureRate, 'g', -1, 64),
		"respool_breaker_open_delay":   dbguard.BreakerPreset().OpenDelay.Initial.String(),
		"respool_retry_connect":        strconv.Itoa(dbguard.RetryPreset().MaxAttempts),
		"respool_max_pause":            dbguard.PausePreset().MaxPause.String(),
	}
	for k, want := range defaults {
		if !strings.Contains(rows[k], want) {
			t.Errorf("README.md: default of %s is %q, want %q", k, rows[k], want)
		}
	}
}

// presetDelay is the breaker's OpenDelay that the open-delay keys give: the
// preset's Strategy with their Initial and Max.
func presetDelay(initial, max time.Duration) delay.Strategy {
	s := dbguard.BreakerPreset().OpenDelay
	s.Initial, s.Max = initial, max
	return s
}

// TestDSNMechanismErrorNamesTheKey: a DSN value that passes its key's own
// check but that the pool refuses (a rule across fields, or a bound of the
// pool's) is reported by sql.Open and OpenDB as the DSN's key and value,
// with the other keys the rule names, not as the Config's field path; the
// pool's *resilience.ConfigError stays reachable, and the password never
// shows.
func TestDSNMechanismErrorNamesTheKey(t *testing.T) {
	tests := []struct {
		query      string
		key, value string
		field      string   // the pool's field, as its ConfigError names it
		mentions   []string // other keys the message names
	}{
		{"respool_max_idle_time=10s&respool_validation_interval=30s", "respool_max_idle_time", "10s", "MaxIdle",
			[]string{"respool_validation_interval (30s)"}},
		{"respool_max_conns=100000000", "respool_max_conns", "100000000", "MaxObjects", nil},
	}
	for _, tc := range tests {
		dsn := "postgres://app:s3cretpw@db.example/app?" + tc.query
		_, _, openDBErr := OpenDB(dsn)
		_, sqlOpenErr := sql.Open(driverName, dsn)
		for _, err := range []error{openDBErr, sqlOpenErr} {
			var de *DSNError
			var ce *resilience.ConfigError
			if !errors.As(err, &de) || de.Key != tc.key || de.Value != tc.value || !errors.Is(err, ErrInvalidConfig) ||
				!errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("%s: %v; want a *DSNError naming %s=%s, matching ErrInvalidConfig, with the pool's ConfigError on %s",
					tc.query, err, tc.key, tc.value, tc.field)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, strconv.Quote(tc.key)) || strings.Contains(msg, "Config.") ||
				strings.Contains(msg, "s3cretpw") {
				t.Errorf("%s: %q; want the key %s named, no Config field path, no password", tc.query, msg, tc.key)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("%s: %q; want it to name %s", tc.query, msg, m)
				}
			}
		}
	}
	// The same values set in code are reported by their field.
	_, err := NewConnector(Config{Connector: dsnTestConnector{}, Pool: pool.Config{MaxIdle: 10 * time.Second, ValidationInterval: 30 * time.Second}})
	var de *DSNError
	if errors.As(err, &de) || !strings.Contains(fmt.Sprint(err), "Config.MaxIdle") {
		t.Errorf("NewConnector(Config): %v; want the field Config.MaxIdle named, no DSN key", err)
	}
}

// TestDSNKeyPaths: every key has the path of the field it sets, as a
// mechanism's ConfigError names it below Config, and an error of the guard
// (a breaker's rule across fields, which ParseDSN checks first today) is
// reported by its key too.
func TestDSNKeyPaths(t *testing.T) {
	paths := dsnKeyPaths()
	keyed := make(map[string]bool)
	for _, k := range paths {
		keyed[k.name] = true
	}
	for _, k := range dsnKeys {
		if !keyed[k.name] {
			t.Errorf("%s: no field path", k.name)
		}
	}
	for path, key := range map[string]string{
		"Pool.MaxIdle":                     "respool_max_idle_time",
		"Pool.BackoffInitial":              "respool_create_backoff",
		"Pool.BackoffDisabled":             "respool_create_backoff",
		"Resilience.Breaker.MinimumCalls":  "respool_breaker_min_calls",
		"Resilience.Breaker.OpenDelay.Max": "respool_breaker_max_open_delay",
		"Resilience.Retry.MaxAttempts":     "respool_retry_connect",
		"Resilience.ConnectRate":           "respool_connect_rate",
	} {
		if k := paths[path]; k == nil || k.name != key {
			t.Errorf("%s: %v; want %s", path, k, key)
		}
	}

	text, err := dsnform.Read("postgres://h/db?respool_breaker_window=5&respool_breaker_min_calls=7", dsnKeyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ce := &resilience.ConfigError{Mechanism: "breaker", Field: "Breaker.MinimumCalls", Value: 7,
		Accepted: "a count not above WindowSize (5)"}
	err = dsnConfigError(text, "Resilience.", fmt.Errorf("wrapped: %w", ce))
	var de *DSNError
	if !errors.As(err, &de) || de.Key != "respool_breaker_min_calls" || de.Value != "7" ||
		de.Accepted != "a count not above respool_breaker_window (5)" || !errors.Is(err, ErrInvalidConfig) ||
		!errors.As(err, new(*resilience.ConfigError)) {
		t.Errorf("guard error: %v (%+v); want the key respool_breaker_min_calls, the window named by its key", err, de)
	}
	poolErr := &resilience.ConfigError{Mechanism: "pool", Field: "MaxIdle", Value: time.Second, Accepted: "..."}
	if err := dsnConfigError(text, "Pool.", poolErr); err != nil {
		t.Errorf("a pool error on a field no key of the DSN set: %v; want nil (the field's error)", err)
	}
}
