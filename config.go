package respool

import (
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// Config configures a respool connector.
//
// ParseDSN builds one from a DSN and FormatDSN writes it back; a Config can
// also be filled in code, which is the only way to set Connector,
// Pool.Clock and Pool.Logger. Every zero field means the default that
// pool.Config documents; an empty Pool.Name means "respool(DRIVER)", with
// DRIVER the DriverName or the Connector's type.
type Config struct {
	// DriverName is the database/sql driver that makes the connections:
	// "pgx", "mysql", or any registered name.
	DriverName string
	// DSN is that driver's data source name, without respool's keys.
	DSN string
	// Connector, when set, makes the connections instead of DriverName and
	// DSN, which must then be empty (configuration in code; not expressible
	// in a DSN).
	Connector driver.Connector
	// Pool configures the pool (and its leak tracking), as pool.Config
	// documents, but for Pool.HoldThreshold: on this path zero means
	// 5m, so that a leaked *sql.Tx or *sql.Conn is reported (longer than a
	// request or a query holds a connection; a job that holds one on
	// purpose for longer, a long transaction or a LISTEN loop on a
	// *sql.Conn, raises it), and a negative threshold means no hold-time
	// report (respool_leak_threshold=off), and Pool.BackPressure: nil means
	// the database's classifier (dbguard.BackPressure), unless
	// BackPressureDisabled.
	Pool pool.Config
	// BackPressureDisabled leaves Pool.BackPressure nil when it is not set
	// (respool_back_pressure=off): the pool then does not know the
	// server's "too many connections" and keeps trying at its full size.
	BackPressureDisabled bool
	// Resilience configures the breaker, the retry of connection attempts,
	// the pause after back-pressure and the connect-rate limiter around the
	// pool (see package dbguard and the package documentation). Its zero
	// value is the database presets (dbguard.BreakerPreset, RetryPreset,
	// PausePreset): all on but the connect-rate limiter and the breaker's
	// slow-call threshold. An empty Name means the pool's. NewConnector
	// checks it, through dbguard.New.
	Resilience dbguard.Config
	// SharedBudget (respool_budget) names a connection budget shared with
	// the other processes of the same database, opened by NewConnector
	// through the module registered for its scheme (RegisterBudget), such
	// as "redis://:password@redis:6379/0?name=orders-db&max=200" (module
	// redisbudget, imported). Every connection the pool opens takes a slot
	// of it first (pool.Config.Budget); the Connector closes it. Empty: none;
	// setting Pool.Budget too is an error. Its password is redacted wherever
	// respool prints the Config.
	SharedBudget string
	// TestQuery, when set, is run to test idle connections instead of Ping.
	TestQuery string
	// InitSQL are statements run in order, each on its own, on every new
	// connection before its first use (respool_init_sql, given once per
	// statement), such as "SET application_name = 'orders'" or
	// "SET search_path TO app, public". A statement that fails fails the
	// creation: the caller gets the server's error (errors.As finds the
	// real driver's type) and the connection is closed. A value holding
	// several statements is sent as one: pgx runs them all (one without
	// arguments goes by the simple protocol); go-sql-driver/mysql only with
	// its multiStatements parameter.
	InitSQL []string
	// PgBouncer (respool_pgbouncer) says that the DSN's server is a
	// PgBouncer and which pool_mode it runs: "" (respool_pgbouncer=off,
	// the default: no PgBouncer), "session" or "transaction". Only for
	// DriverName "pgx" from a DSN; NewConnector refuses it otherwise.
	//
	// With either mode: the DSN may set only the run-time parameters
	// PgBouncer accepts at connect (application_name, client_encoding,
	// DateStyle, TimeZone, standard_conforming_strings; it refuses the
	// others, search_path or statement_timeout, "unsupported startup
	// parameter"): NewConnector refuses the others; and the socket of a
	// cancel request (CancelWait) is kept open until PgBouncer closes it,
	// for at most 15s, though the call returns within CancelWait: PgBouncer
	// 1.18.0 to 1.19.0 exit when a client closes it first (their bug #801).
	//
	// "transaction", where PgBouncer may run each transaction, and each
	// statement outside one, on another server connection, where a session's
	// state is missing or another client's: pgx's default_query_exec_mode is
	// exec unless the DSN chooses exec, simple_protocol or cache_describe
	// (NewConnector refuses cache_statement and describe_exec, which break
	// there); a statement database/sql prepares (db.Prepare, tx.Prepare) is
	// described as the unnamed statement, for its errors and its number of
	// parameters, and each run sends its text again, in one round trip, as
	// an unprepared query does: no named server statement; InitSQL is
	// refused. AfterConnect's and BeforeAcquire's session settings, SET
	// outside a transaction, LISTEN, advisory locks and temporary tables do
	// not hold either: keep session state within a transaction (SET LOCAL).
	//
	// Off, a pgx connection whose server looks like a pooler (a backend
	// process id above 2^22, which PgBouncer makes up and PostgreSQL on
	// Linux never has) is logged once, at Warn, asking for this setting.
	PgBouncer string
	// LogLevel (respool_log) is the least level of the lines respool logs
	// for this Connector (its pool's, breaker's, pause's and hooks'), which
	// go to Pool.Logger, or slog.Default() when that is nil, whatever the
	// handler's own level: respool_log=debug shows respool's Debug lines on
	// a handler at Info. A *slog.LevelVar changes it while the Connector
	// runs; a level above slog.LevelError (respool_log=off) turns respool's
	// lines off. Nil leaves the level to the handler: slog.Default()'s is
	// Info, at which respool logs changes of state (creations failing for
	// good and recovering, the circuit opening and closing, a pause
	// beginning and ending, a leak), each once, not a line per attempt.
	LogLevel slog.Leveler

	// The hooks below are respool's pool.Factory hooks for database/sql, in the
	// manner of pgxpool's. Each gets the real driver's connection (for pgx a
	// *stdlib.Conn, whose Conn method gives the *pgx.Conn), and is bounded by
	// a timeout of the pool; AfterConnect and BeforeAcquire get a context
	// with the values of the context of the caller whose query needs the
	// connection. Their errors are treated as a failed creation's: the
	// connection is closed, and the error (its password redacted) is logged
	// as "connection refused", or, for AfterConnect, returned to the caller
	// (logged as "create failed" when no caller waits for it).

	// AfterConnect prepares every new connection, after InitSQL, within
	// the creation: under Pool.CreateTimeout, which the pool enforces. An
	// error fails the creation: the caller whose query asked for the
	// connection gets it, as it would the real driver's connection error.
	AfterConnect func(ctx context.Context, conn driver.Conn) error
	// BeforeAcquire checks a connection taken from idle before it is handed
	// to the caller, after the real driver's ResetSession passed it: in the
	// caller's goroutine, with the caller's context bounded by
	// Pool.TestTimeout (a hook that ignores its context is not cut short).
	// An error rejects the connection: it is closed, and the pool takes
	// another or makes a new one, which is not checked (AfterConnect has
	// just prepared it).
	BeforeAcquire func(ctx context.Context, conn driver.Conn) error
	// AfterRelease runs after database/sql is done with a connection, in
	// the background, before the connection is idle again: bounded by
	// Pool.TestTimeout, which the pool enforces, and by Close. An error, or
	// running past the timeout, discards the connection. It costs a
	// goroutine per give-back; nil costs nothing.
	AfterRelease func(ctx context.Context, conn driver.Conn) error

	// PgxBeforeConnect (DriverName "pgx") and MySQLBeforeConnect
	// (DriverName "mysql") run before each connection attempt, with the
	// attempt's context (it holds the values of the context of the caller
	// whose query needs the connection, and is bounded by
	// Pool.CreateTimeout), on the real driver's config parsed from DSN:
	// set a fresh password or IAM token, TLS, pgx's tracers. Their
	// signatures are pgx stdlib's OptionBeforeConnect's and
	// go-sql-driver/mysql's BeforeConnect's. Each attempt gets its own copy
	// of the parsed config (pgx.ConnConfig.Copy, mysql.Config.Clone: maps
	// and TLS configs included), so a change lasts one attempt; to keep
	// state across attempts (a cached token), keep it in the hook. respool's
	// pieces stay on, put on top of what the hook left: for pgx, the cancel
	// handler (CancelWait, which replaces BuildContextWatcherHandler) and
	// the dial function that watches the socket (SessionEndWait, which wraps
	// DialFunc); for mysql the connection is dialed by respool's dial
	// function (and the DSN's timeout), not the hook's DialFunc, and
	// rejectReadOnly and multiStatements are read from the DSN. The
	// password the hook sets is redacted from the attempt's error like the
	// DSN's. An error fails the attempt: the caller gets it (redacted). An
	// attempt the server refuses for its credentials (PostgreSQL 28P01,
	// 28000; MySQL 1045, 1698) is made once more after the retry's
	// first delay, the hook asked again (a secret rotated between
	// the hook and the server's check), then opens the circuit (see the
	// package documentation). Set with any other driver or with Connector,
	// NewConnector refuses them; with a DSN the driver cannot parse too.
	PgxBeforeConnect   func(ctx context.Context, cc *pgx.ConnConfig) error
	MySQLBeforeConnect func(ctx context.Context, mc *mysql.Config) error

	// CloseTimeout is how long Connector.Close, and so sql.DB.Close, waits
	// for connections still in use to come back and be closed
	// (respool_close_timeout). Zero means no wait: Close returns at once and
	// they are closed as they come back. Negative is refused.
	CloseTimeout time.Duration

	// The two waits below keep a connection whose statement was cancelled
	// counted against Pool.MaxObjects until the server has ended that
	// statement, so that the server never holds more sessions open than the
	// pool's maximum. They apply to connections respool makes from a pgx or
	// go-sql-driver/mysql DSN (not to a Connector's). Zero means the
	// default; negative turns the wait off.
	//
	// PostgreSQL drops a session from its count (max_connections,
	// pg_stat_activity) before it closes the session's socket. MariaDB and
	// MySQL close the socket first, then tear the session down (roll back
	// its transaction, free it) and only then drop it from their count
	// (max_connections, Threads_connected, Max_used_connections); respool
	// keeps the slot 5ms more for that teardown. A teardown that takes
	// longer (a long rollback, a server short of CPU) is counted beside the
	// connection that replaces it: keep a MySQL server's max_connections a
	// little above the sum of the pools' maximums.

	// CancelWait (respool_cancel_wait, default 500ms): when the
	// context of a pgx statement ends, respool asks PostgreSQL to cancel
	// the statement (a cancel request, pgconn's
	// CancelRequestContextWatcherHandler) and keeps the connection, which
	// the server has freed, instead of closing it while the server still
	// runs the statement. The call returns once the server has stopped the
	// statement (without pgconn's fixed 100ms pause: a cancel that reaches
	// the session late is absorbed by a ping before the connection's next
	// use), or after CancelWait, when the connection is closed.
	// The caller's error matches its context's (errors.Is(err,
	// context.DeadlineExceeded)) and the server's 57014 query_canceled.
	// Off: pgx's default, the connection is closed at once.
	CancelWait time.Duration
	// SessionEndWait (respool_session_end_wait, default 5s): a connection
	// closed by the pool keeps its slot
	// until the server has ended its session (it closes its end of the
	// socket; MySQL's teardown after that: see above), for at most
	// SessionEndWait. go-sql-driver/mysql closes a
	// connection whose context ended while the server still runs its
	// statement; the session ends when the statement does. Off: the slot is
	// freed when the real driver's Close returns. For a go-sql-driver/mysql
	// DSN, respool dials the server itself (tcp, tcp6, tcp4 and unix; as
	// the driver does, with TCP keep-alive), so a dial function registered
	// with mysql.RegisterDialContext for those networks is not used: turn
	// the wait off to keep one.
	SessionEndWait time.Duration
}

// validate checks the fields of c that no mechanism reads, the ones
// NewConnector documents. text is c.DSN as parseDSN read it; when it is nil
// (or not what c.DSN reads as), validate reads c.DSN, once. It returns the
// DSN as read, whose secrets the Connector keeps.
func (c *Config) validate(text *dsnform.Text) (*dsnform.Text, error) {
	switch {
	case c.Connector == nil && c.DriverName == "":
		return nil, fmt.Errorf("%w: set DriverName (and DSN) or Connector", ErrInvalidConfig)
	case c.Connector != nil && (c.DriverName != "" || c.DSN != ""):
		return nil, fmt.Errorf("%w: Connector is set, so DriverName and DSN must be empty", ErrInvalidConfig)
	case c.DriverName == driverName:
		return nil, fmt.Errorf("%w: DriverName %q: respool cannot wrap itself", ErrInvalidConfig, c.DriverName)
	}
	if text == nil || text.Rest != c.DSN || dsnform.Of(c.DSN) != text.Form {
		// Not what ParseDSN read (the rest of a DSN it read in its own form
		// holds no respool key).
		t, err := dsnform.Read(c.DSN, dsnKeyPrefix)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: DSN: %w", ErrInvalidConfig, err)
		case t.Params != nil:
			return nil, fmt.Errorf("%w: DSN holds the respool key %s: parse the DSN with ParseDSN, or set the Config field",
				ErrInvalidConfig, dsnform.Quote(t.Params[0].Key))
		}
		text = t
	}
	if err := c.validateHooks(); err != nil {
		return nil, err
	}
	if err := refusePgxpoolKeys(text.Rest); err != nil {
		return nil, err
	}
	if c.CloseTimeout < 0 {
		return nil, fmt.Errorf("%w: CloseTimeout %v: must be 0 (Close does not wait) or positive", ErrInvalidConfig, c.CloseTimeout)
	}
	for i, q := range c.InitSQL {
		if strings.TrimSpace(q) == "" {
			return nil, fmt.Errorf("%w: InitSQL[%d] is empty: give one SQL statement each", ErrInvalidConfig, i)
		}
	}
	if err := c.checkPgBouncer(text); err != nil {
		return nil, err
	}
	return text, nil
}

// validateHooks checks that PgxBeforeConnect and MySQLBeforeConnect are
// set for their driver's DSN only.
func (c *Config) validateHooks() error {
	for _, h := range []struct {
		name    string
		set     bool
		drivers []string
	}{
		{"PgxBeforeConnect", c.PgxBeforeConnect != nil, []string{"pgx", "pgx/v5"}},
		{"MySQLBeforeConnect", c.MySQLBeforeConnect != nil, []string{"mysql"}},
	} {
		switch {
		case !h.set || slices.Contains(h.drivers, c.DriverName):
		case c.Connector != nil:
			return fmt.Errorf("%w: %s is set with a Connector: set the hook on your connector (stdlib.OptionBeforeConnect, mysql.BeforeConnect), or give DriverName %q and a DSN",
				ErrInvalidConfig, h.name, h.drivers[0])
		default:
			return fmt.Errorf("%w: %s is set, for DriverName %q; DriverName is %q", ErrInvalidConfig, h.name, h.drivers[0], c.DriverName)
		}
	}
	return nil
}

// guardConfig returns the configuration of the Connector's Guard: Resilience
// with the pool's name, and a Listener that logs, besides calling
// Resilience.Listener, what changes the callers' lot (see logEvents).
func (c *Config) guardConfig(poolName string, logger *slog.Logger) dbguard.Config {
	gc := c.Resilience
	if gc.Name == "" {
		gc.Name = poolName
	}
	logged := logEvents(logger, poolName)
	if user := gc.Listener; user != nil {
		gc.Listener = func(e resilience.Event) { user(e); logged(e) }
	} else {
		gc.Listener = logged
	}
	return gc
}

// poolConfig returns the configuration NewConnector gives the pool: Pool
// with the database/sql path's defaults, an empty Name as "respool(DRIVER)",
// HoldThreshold and BackPressure as Config.Pool documents them.
func (c *Config) poolConfig() pool.Config {
	pc := c.Pool
	if pc.Name == "" {
		pc.Name = "respool(" + driverLabel(*c) + ")"
	}
	if pc.BackPressure == nil && !c.BackPressureDisabled {
		pc.BackPressure = dbguard.BackPressure
	}
	if c.LogLevel != nil {
		pc.Logger = leveled(cmp.Or(pc.Logger, slog.Default()), c.LogLevel)
	}
	switch {
	case pc.HoldThreshold == 0:
		pc.HoldThreshold = defaultHoldThreshold
	case pc.HoldThreshold < 0:
		pc.HoldThreshold = 0 // the pool's "no report"
	}
	return pc
}

// String describes c for logs without its password: the driver, the
// connector's type when one is set, and the DSN as FormatDSN writes it (with
// the pool's name as respool_name) with the password replaced by "xxxxx"
// (RedactDSN).
//
// String, GoString, Format and LogValue have value receivers, so that a
// Config printed or logged by value hides its password as a *Config does.
func (c Config) String() string {
	redacted := c
	redacted.DSN = RedactDSN(c.DSN)
	redacted.SharedBudget = dsnform.RedactText(c.SharedBudget)
	var parts []string
	if c.DriverName != "" {
		parts = append(parts, "driver="+c.DriverName)
	}
	if c.Connector != nil {
		parts = append(parts, fmt.Sprintf("connector=%T", c.Connector))
	}
	parts = append(parts, "dsn="+strconv.Quote(redacted.FormatDSN()))
	return strings.Join(parts, " ")
}

// GoString is %#v: the Go syntax of c with its DSN redacted (RedactDSN).
func (c Config) GoString() string {
	type fields Config // no methods: %#v prints the fields
	c.DSN = RedactDSN(c.DSN)
	c.SharedBudget = dsnform.RedactText(c.SharedBudget)
	return "respool.Config" + strings.TrimPrefix(fmt.Sprintf("%#v", fields(c)), "respool.fields")
}

// Format prints c for every verb of package fmt without its password: %#v
// as GoString, %v, %+v, %s, %q, %x and %X as String, any other verb as
// %!verb(respool.Config=String).
func (c Config) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = io.WriteString(f, c.GoString())
	case strings.ContainsRune("vsqxX", verb):
		_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), c.String())
	default:
		_, _ = fmt.Fprintf(f, "%%!%c(respool.Config=%s)", verb, c.String())
	}
}

// LogValue makes slog log c as a group without its password: driver,
// connector (its type), dsn (RedactDSN of the underlying DSN), and one
// attribute per respool key set, named without the "respool_" prefix (name,
// max_conns, ...).
func (c Config) LogValue() slog.Value {
	var attrs []slog.Attr
	if c.DriverName != "" {
		attrs = append(attrs, slog.String("driver", c.DriverName))
	}
	if c.Connector != nil {
		attrs = append(attrs, slog.String("connector", fmt.Sprintf("%T", c.Connector)))
	}
	attrs = append(attrs, slog.String("dsn", RedactDSN(c.DSN)))
	for i := range dsnKeys {
		k := &dsnKeys[i]
		if k.name == dsnKeyDriver {
			continue
		}
		if v, ok := k.logValue(&c); ok {
			attrs = append(attrs, slog.Attr{Key: strings.TrimPrefix(k.name, dsnKeyPrefix), Value: v})
		}
	}
	return slog.GroupValue(attrs...)
}

var (
	_ fmt.Stringer   = Config{}
	_ fmt.GoStringer = Config{}
	_ fmt.Formatter  = Config{}
	_ slog.LogValuer = Config{}
)
