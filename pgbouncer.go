package respool

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/internal/dsnform"
)

// The values of Config.PgBouncer (respool_pgbouncer): PgBouncer's
// pool_mode. "" (respool_pgbouncer=off) is no PgBouncer.
const (
	pgbouncerSession     = "session"
	pgbouncerTransaction = "transaction"
)

// pgbouncerAccepted is what Config.PgBouncer and respool_pgbouncer accept.
const pgbouncerAccepted = `off, session or transaction (PgBouncer's pool_mode)`

// pgbouncerCancelHold bounds how long respool keeps the socket of a cancel
// request to a PgBouncer open, waiting for PgBouncer to close it: PgBouncer
// 1.18.0 up to 1.19.0 exits (FATAL "bad client state") when a client
// closes a cancel request's socket before PgBouncer has forwarded the
// request (bug #801, fixed in 1.19.1), which takes it a new server
// connection and can outlast Config.CancelWait on a busy server. The call
// itself still returns within CancelWait.
const pgbouncerCancelHold = 15 * time.Second

// pgbouncerPIDFloor: a PostgreSQL backend's process id on Linux is at most
// 2^22 (pid_max's ceiling); PgBouncer makes up the cancel key a client
// sees, so its "process id" is a random 32-bit number, above 2^22 for
// 1023 connections in 1024 (see poolerWarning).
const pgbouncerPIDFloor = 1 << 22

// pgbouncerStartupParams are the run-time parameters PgBouncer accepts in
// a client's startup packet, and keeps per client, setting them again on
// each server connection it hands that client: any other (search_path,
// statement_timeout, options...) it refuses ("unsupported startup
// parameter"), or, when its ignore_startup_parameters lists it, drops.
var pgbouncerStartupParams = []string{"application_name", "client_encoding", "datestyle", "standard_conforming_strings", "timezone"}

// checkPgBouncer checks Config.PgBouncer (see Config.validate): a known
// value, for a pgx DSN, no InitSQL in transaction mode, and, in the DSN
// (rest, as read: its secrets redact pgx's errors), no run-time parameter
// PgBouncer refuses and, in transaction mode, no default_query_exec_mode
// that does not work through it.
func (c *Config) checkPgBouncer(text *dsnform.Text) error {
	switch c.PgBouncer {
	case "":
		return nil
	case pgbouncerSession, pgbouncerTransaction:
	default:
		return fmt.Errorf("%w: PgBouncer (respool_pgbouncer) %q: want \"\" (off), %q or %q (PgBouncer's pool_mode)",
			ErrInvalidConfig, c.PgBouncer, pgbouncerSession, pgbouncerTransaction)
	}
	what := fmt.Sprintf("PgBouncer %q (respool_pgbouncer=%s)", c.PgBouncer, c.PgBouncer)
	switch {
	case c.Connector != nil:
		return fmt.Errorf("%w: %s is set with a Connector: it configures the pgx connections respool makes from a DSN (DriverName \"pgx\"); configure your connector for PgBouncer yourself", ErrInvalidConfig, what)
	case c.DriverName != "pgx" && c.DriverName != "pgx/v5":
		return fmt.Errorf("%w: %s is for PostgreSQL through PgBouncer, with DriverName \"pgx\"; DriverName is %q", ErrInvalidConfig, what, c.DriverName)
	case c.PgBouncer == pgbouncerTransaction && len(c.InitSQL) > 0:
		return fmt.Errorf("%w: InitSQL (respool_init_sql) with %s: PgBouncer hands each transaction any server connection, so a session's settings do not hold and reach other clients; set them with ALTER ROLE ... SET, PgBouncer's connect_query, or SET LOCAL in each transaction", ErrInvalidConfig, what)
	}
	pc, err := pgx.ParseConfig(text.Rest)
	if err != nil {
		return fmt.Errorf("%w: %s: DSN: %w", ErrInvalidConfig, what, text.Secrets.Redact(err))
	}
	var refused []string
	for name := range pc.RuntimeParams {
		if !slices.Contains(pgbouncerStartupParams, strings.ToLower(name)) {
			refused = append(refused, name)
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return fmt.Errorf("%w: %s: the DSN sets the run-time parameter %s, which PgBouncer refuses at connect (\"unsupported startup parameter\") or, listed in its ignore_startup_parameters, drops; it accepts only %s: set the others with ALTER ROLE ... SET or in PgBouncer's [databases] entry",
			ErrInvalidConfig, what, strings.Join(refused, ", "), strings.Join(pgbouncerStartupParams, ", "))
	}
	if c.PgBouncer == pgbouncerTransaction {
		if _, given, _ := dsnform.Split(text.Rest, "default_query_exec_mode"); len(given) > 0 {
			if err := pgbouncerExecMode(pc.DefaultQueryExecMode); err != nil {
				return fmt.Errorf("%w: %s: the DSN's default_query_exec_mode=%s %w", ErrInvalidConfig, what, given[0].Value, err)
			}
		}
	}
	return nil
}

// pgbouncerExecMode refuses the pgx query modes that do not work through
// PgBouncer's transaction pooling.
func pgbouncerExecMode(m pgx.QueryExecMode) error {
	switch m {
	case pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec:
		return fmt.Errorf("does not work through PgBouncer's transaction pooling (%s): want exec, simple_protocol or cache_describe, or none (respool then uses exec)",
			map[pgx.QueryExecMode]string{
				pgx.QueryExecModeCacheStatement: "it runs named server statements, which live on one server connection and PgBouncer hands each transaction any",
				pgx.QueryExecModeDescribeExec:   "it describes a statement and runs it in two round trips, which PgBouncer may send to two server connections",
			}[m])
	}
	return nil
}

// pgbouncerConnConfig sets, for PgBouncer's transaction mode, pgx's query
// mode of pc to exec, unless the DSN chose one (checkPgBouncer refused
// those that do not work).
func pgbouncerConnConfig(mode string, pc *pgx.ConnConfig, dsn string) {
	if mode != pgbouncerTransaction {
		return
	}
	if _, given, _ := dsnform.Split(dsn, "default_query_exec_mode"); len(given) == 0 {
		pc.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
}

// unnamedStmt is a statement prepared for PgBouncer's transaction mode
// (Config.PgBouncer): PgBouncer may run each transaction on another server
// connection, where a named server statement is missing or holds another
// client's (PostgreSQL 26000, 42P05), and pgx's driver prepares every
// statement as a named one. So Prepare only parses and describes the query
// as the unnamed statement, one round trip, for its errors and the number
// of its parameters, and each run sends the query again, as the
// connection's queries do (pgx's exec mode: parse, bind and execute in one
// round trip). It holds nothing on the server, so Close does nothing.
type unnamedStmt struct {
	conn     driver.Conn // the real driver's connection
	query    string
	numInput int
}

var (
	_ driver.StmtExecContext  = (*unnamedStmt)(nil)
	_ driver.StmtQueryContext = (*unnamedStmt)(nil)
)

// prepareUnnamed describes query on conn, a pgx connection, as the unnamed
// statement.
func prepareUnnamed(ctx context.Context, conn driver.Conn, query string) (driver.Stmt, error) {
	s := &unnamedStmt{conn: conn, query: query, numInput: -1}
	pc, ok := conn.(interface{ Conn() *pgx.Conn })
	if !ok {
		return s, nil // not pgx: the runs report the query's errors
	}
	sd, err := pc.Conn().PgConn().Prepare(ctx, "", query, nil)
	if err != nil {
		return nil, err
	}
	s.numInput = len(sd.ParamOIDs)
	return s, nil
}

func (s *unnamedStmt) Close() error  { return nil }
func (s *unnamedStmt) NumInput() int { return s.numInput }

// Exec is the pre-context form, which database/sql does not call.
//
// Deprecated: use ExecContext.
func (s *unnamedStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

// Query is the pre-context form, which database/sql does not call.
//
// Deprecated: use QueryContext.
func (s *unnamedStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

func (s *unnamedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := s.conn.(driver.ExecerContext)
	if !ok {
		return nil, fmt.Errorf("respool: %T cannot run a statement without preparing it", s.conn)
	}
	return ec.ExecContext(ctx, s.query, args)
}

func (s *unnamedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := s.conn.(driver.QueryerContext)
	if !ok {
		return nil, fmt.Errorf("respool: %T cannot run a statement without preparing it", s.conn)
	}
	return qc.QueryContext(ctx, s.query, args)
}

// poolerWarning tells, once per Connector, that a connection's server looks
// like a connection pooler while Config.PgBouncer is off: a pgx
// connection whose backend process id is above 2^22, which no PostgreSQL
// server on Linux gives (pgbouncerPIDFloor). It reads what the server sent
// at connect: no round trip.
type poolerWarning struct {
	logger   *slog.Logger
	poolName string
	warned   atomic.Bool
}

// check looks at conn, a connection just made.
func (w *poolerWarning) check(conn driver.Conn) {
	if w == nil || w.warned.Load() {
		return
	}
	pc, ok := conn.(interface{ Conn() *pgx.Conn })
	if !ok {
		return
	}
	pid := pc.Conn().PgConn().PID()
	if pid <= pgbouncerPIDFloor || w.warned.Swap(true) {
		return
	}
	w.logger.Warn("the server looks like a connection pooler such as PgBouncer (its backend process id is above 2^22, which PostgreSQL's never is on Linux): behind PgBouncer set respool_pgbouncer=transaction (or session, its pool_mode)",
		"pool", w.poolName, "backend_pid", pid)
}
