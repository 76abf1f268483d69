package respool

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// Connector is a driver.Connector whose connections come from a respool
// pool. Use it with sql.OpenDB; sql.Open("respool", dsn) makes one for you.
type Connector struct {
	pool         *pool.Pool[driver.Conn] // of *physConn
	guard        *dbguard.Guard          // the creation path, and the breaker's admission of takes and statements
	testTimeout  time.Duration           // the pool's TestTimeout
	closeTimeout time.Duration           // Config.CloseTimeout

	stmts stmtRegistry // open statements, by query
	// unnamedStmts: statements are prepared as unnamedStmt, for
	// PgBouncer's transaction mode (Config.PgBouncer).
	unnamedStmts bool

	attempts attemptSet // the connection attempts under way

	role  *serverRole   // nil for a DSN that asks for reads (see forReads)
	watch *primaryWatch // nil but for a pgx DSN for writes with several hosts

	budget pool.Budget // opened for Config.SharedBudget, closed with the pool (nil: none)
}

var (
	_ driver.Connector = (*Connector)(nil)
	_ io.Closer        = (*Connector)(nil)
)

// defaultHoldThreshold is the database/sql path's default of
// Pool.HoldThreshold (see Config.Pool): a connection held longer is
// reported once as HELD-TOO-LONG (with the stack of the code that took it
// when Pool.LeakCaptureStack is set).
const defaultHoldThreshold = 5 * time.Minute

// NewConnector checks cfg and starts its pool. It refuses, with an error
// matching ErrInvalidConfig: neither DriverName nor Connector set, or both
// a Connector and a DriverName or DSN; a DriverName of "respool" (respool
// cannot wrap itself); a DSN that still holds respool keys (they belong in
// the Config's fields) or one of pgxpool's pool_ keys (pgx would send it to
// the server, which refuses it), whose structure cannot be read (an
// unterminated quote), or whose password its form cannot carry as written
// (a URL password holding an unencoded '@' or '/': the error says to
// percent-encode it, and shows none of it); a negative CloseTimeout; an
// empty InitSQL statement; and what pool.New refuses of Pool or
// dbguard.New of Resilience, each value checked once, there: errors.As
// finds the *resilience.ConfigError naming the field. When sql.Open or
// OpenDB read the Config from a DSN, such an error is a *DSNError naming
// the DSN's key and value instead of the field, and the keys of the other
// fields its rule names (respool_max_idle_time "10s": want a duration not
// shorter than respool_validation_interval (30s)...). Registration of
// DriverName is not checked: the driver may be registered later, before
// the first connection.
//
// A zero Pool.HoldThreshold means 5m (a negative
// one, respool_leak_threshold=off, no hold-time report), so that every leak
// made through database/sql is reported out of the box: a *sql.Rows dropped
// without Close by the garbage collector, a *sql.Tx or *sql.Conn never
// ended by hold time (see the package documentation). Stacks are not recorded by default: that costs a
// stack walk and two allocations per take, a few microseconds of CPU per
// query, which shows in a SELECT 1 benchmark; Pool.LeakCaptureStack
// (respool_leak_stack) turns them on.
func NewConnector(cfg Config) (*Connector, error) {
	return newConnector(cfg, nil, pool.New[driver.Conn])
}

// newConnector is NewConnector with the pool made by newPool (a Group's
// member is a key of the Group's pool.Keyed). text is nil, or cfg.DSN as
// parseDSN read it, cfg being the Config it returned, valid: cfg is then
// neither validated nor its DSN read again.
func newConnector(cfg Config, text *dsnform.Text,
	newPool func(pool.Factory[driver.Conn], pool.Config) (*pool.Pool[driver.Conn], error)) (*Connector, error) {
	var err error
	if text == nil {
		if text, err = cfg.validate(nil); err != nil {
			return nil, err
		}
	}
	base, secrets, err := baseConnector(cfg, text.Secrets)
	if err != nil {
		return nil, err
	}
	pc := cfg.poolConfig()
	c := &Connector{closeTimeout: cfg.CloseTimeout, unnamedStmts: cfg.PgBouncer == pgbouncerTransaction}
	c.attempts.pgx = cfg.DriverName == "pgx" || cfg.DriverName == "pgx/v5"
	if !forReads(cfg) {
		c.role = &serverRole{connector: base, clock: cmp.Or(pc.Clock, clock.System())}
	}
	hooks := &connHooks{
		initSQL: cfg.InitSQL, afterConnect: cfg.AfterConnect,
		beforeAcquire: cfg.BeforeAcquire, afterRelease: cfg.AfterRelease,
		secrets: secrets, logger: pc.Logger, poolName: pc.Name,
	}
	if hooks.logger == nil {
		hooks.logger = slog.Default() // as the pool's
	}
	if c.guard, err = dbguard.New(cfg.guardConfig(pc.Name, hooks.logger)); err != nil {
		if dsnErr := dsnConfigError(text, "Resilience.", err); dsnErr != nil {
			return nil, dsnErr
		}
		return nil, fmt.Errorf("%w: Resilience: %w", ErrInvalidConfig, err)
	}
	if c.role != nil {
		if c.watch = newPrimaryWatch(cfg, cmp.Or(pc.Clock, clock.System()), pc.Name, hooks.logger); c.watch != nil {
			c.watch.found = c.writableFound
		}
	}
	f := physFactory{real: connFactory{connector: base, testQuery: cfg.TestQuery}, stmts: &c.stmts, hooks: hooks,
		guard: c.guard, attempts: &c.attempts, role: c.role, watch: c.watch}
	if cfg.PgBouncer == "" {
		f.pooler = &poolerWarning{logger: hooks.logger, poolName: pc.Name}
	}
	if c.watch != nil {
		c.watch.dial = f.real.create
	}
	if c.budget, err = openBudget(&cfg); err != nil {
		c.retire()
		return nil, err
	}
	if c.budget != nil {
		pc.Budget = c.budget
	}
	if c.pool, err = newPool(f.poolFactory(), pc); err != nil {
		c.retire()
		_ = closeBudget(c.budget)
		if dsnErr := dsnConfigError(text, "Pool.", err); dsnErr != nil {
			return nil, dsnErr
		}
		if errors.As(err, new(*resilience.ConfigError)) && !errors.Is(err, ErrInvalidConfig) {
			err = fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return nil, err
	}
	c.testTimeout = c.pool.Config().TestTimeout
	if c.role != nil {
		c.role.reset = c.pool.Reset
	}
	return c, nil
}

// OpenDB parses dsn (see ParseDSN) and returns a *sql.DB on a new Connector,
// and the Connector, for its Stats (ConnectorOf(db) returns it too).
func OpenDB(dsn string) (*sql.DB, *Connector, error) {
	cfg, text, err := parseDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	c, err := newConnector(*cfg, text, pool.New[driver.Conn])
	if err != nil {
		return nil, nil, err
	}
	return sql.OpenDB(c), c, nil
}

// baseConnector returns the real driver's connector for cfg, and the
// secrets its errors are redacted of: those of the DSN (secrets), and the
// passwords the driver's own parser read, for pgx and go-sql-driver/mysql.
// Connectors made from a DSN redact their errors.
func baseConnector(cfg Config, secrets dsnform.Secrets) (driver.Connector, dsnform.Secrets, error) {
	if cfg.Connector != nil {
		return cfg.Connector, secrets, nil
	}
	base, passwords, ok := dialedConnector(cfg) // pgx and mysql: see dialed.go
	secrets = secrets.With(passwords...)
	if ok {
		return &redactingConnector{Connector: base, secrets: secrets}, secrets, nil
	}
	if err := hookedDSNError(cfg, secrets); err != nil {
		return nil, nil, err
	}
	// sql.Open is the only way to reach a registered driver by name; for a
	// driver with DriverContext it calls OpenConnector, whose error may
	// quote the DSN.
	db, err := sql.Open(cfg.DriverName, cfg.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("respool: driver %q: %w", cfg.DriverName, secrets.Redact(err))
	}
	d := db.Driver()
	_ = db.Close()
	base = &dsnConnector{d: d, dsn: cfg.DSN}
	if dc, ok := d.(driver.DriverContext); ok {
		if base, err = dc.OpenConnector(cfg.DSN); err != nil {
			return nil, nil, secrets.Redact(err)
		}
	}
	return &redactingConnector{Connector: base, secrets: secrets}, secrets, nil
}

// dsnConnector adapts a driver without DriverContext.
type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c *dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c *dsnConnector) Driver() driver.Driver                        { return c.d }

// Connect takes a connection from the pool (see physFactory.beforeHandOut
// for what is checked), unless the circuit is open (see take).
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	h, err := c.take(ctx)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c}
	cn.setAttached(h)
	return cn, nil
}

// take takes a connection from the pool for a caller, unless the breaker
// refuses: while the circuit is open it fails at once with the breaker's
// *resilience.RejectedError (errors.Is breaker.ErrOpen, with RetryAfter),
// so that a caller of a dead or frozen server neither waits for a
// connection nor takes an idle one; while it is half-open, one caller at a
// time goes into the pool (dbguard.Guard.Admit), the others fail at once
// with breaker.ErrHalfOpenFull. A refused or failed take returns the
// pool's error (errors.Is(err, pool.ErrQueueFull), pool.ErrClosed, a
// *pool.WaitError, a *pool.OverloadError, a *pool.CreateError when the
// take failed fast while creations fail), or the real driver's own error
// when making a connection for this caller failed (see takeError); a wait
// ended by a deadline, a cancel or a timeout while a connection attempt
// was under way, or by the pool giving up on the attempt made for the
// caller, in a *ConnectPhaseError naming the attempt's address and phase
// (see attemptSet.explain).
func (c *Connector) take(ctx context.Context) (pool.Handle[driver.Conn], error) {
	done, err := c.guard.Admit()
	if err != nil {
		return pool.Handle[driver.Conn]{}, err
	}
	h, err := c.pool.Take(ctx)
	done()
	if err != nil {
		var ce *pool.CreateError
		own := errors.As(err, &ce) && !ce.FailedFast
		return h, c.attempts.explain(takeError(err), own)
	}
	return h, nil
}

// takeError is the error of a failed Take as the caller sees it: the real
// driver's own value when the connection made for this caller failed, as
// its users expect (a refusal of the credentials too, which opened the
// circuit: the callers after it get the message naming the user and the
// server; other failures that opened it come wrapped by package dbguard),
// or a dbguard rejection, else the pool's error as it
// is: among them the *pool.CreateError of a take that failed fast, which
// carries when the pool tries again (RetryAfter), and which errors.As sees
// through to the real driver's error.
func takeError(err error) error {
	var ce *pool.CreateError
	if errors.As(err, &ce) && !ce.FailedFast {
		var cred *credentialsError
		if errors.As(ce.Err, &cred) {
			return cred.err // as the plain driver returns it: err.(*mysql.MySQLError) holds
		}
		return ce.Err
	}
	return err
}

// Driver returns respool's driver, bound to c: the value sql.DB.Driver
// returns for a *sql.DB on c, through which ConnectorOf finds c.
func (c *Connector) Driver() driver.Driver { return sqlDriver{c: c} }

// Name returns the name of c's pool: respool_name, Config.Pool.Name, or by
// default "respool(DRIVER)" with DRIVER the driver's name (for example
// "respool(pgx)") or the Config.Connector's type. It names c in log lines.
func (c *Connector) Name() string { return c.pool.Config().Name }

// Format prints c, for every verb of package fmt, as its type and its name
// in quotes: not its fields, which change while it is in use (fmt would
// read them unsynchronized) and include the connector that holds the DSN.
func (c *Connector) Format(f fmt.State, _ rune) { _, _ = fmt.Fprintf(f, "%T(%q)", c, c.Name()) }

// Stats returns the pool's statistics: the truth about physical
// connections (the connections, the effective size, the creations and
// their failures, the waits), unlike sql.DB.Stats, which sees connections
// only while they are in use.
func (c *Connector) Stats() pool.Stats { return c.pool.Stats() }

// DBStats returns Stats in the shape of sql.DBStats, for dashboards and
// collectors built on database/sql's statistics: through respool,
// sql.DB.Stats counts database/sql's own handles, which hold a physical
// connection only while in use, so its OpenConnections, Idle and waits say
// little of the connections to the server; these do. MaxOpenConnections
// is the size in force, OpenConnections every connection alive (those
// being opened and tested included), WaitCount and WaitDuration the takes
// that waited for one, MaxIdleClosed the connections closed because the
// pool held more than a Resize allowed (respool keeps no separate idle
// limit), MaxIdleTimeClosed and MaxLifetimeClosed those closed for
// Pool.MaxIdle and Pool.MaxLifetime.
func (c *Connector) DBStats() sql.DBStats {
	s := c.pool.Stats()
	return sql.DBStats{
		MaxOpenConnections: s.MaxObjects,
		OpenConnections:    s.Total,
		InUse:              s.InUse,
		Idle:               s.Idle,
		WaitCount:          int64(s.Waits),
		WaitDuration:       s.WaitTime,
		MaxIdleClosed:      int64(s.Destroys.Resized),
		MaxIdleTimeClosed:  int64(s.Destroys.Idle),
		MaxLifetimeClosed:  int64(s.Destroys.Lifetime),
	}
}

// Observe sets the Observer the Connector's pool tells of each take's wait,
// each connection's opening and each hold (nil: none): see
// pool.Pool.Observe. Module github.com/respool/respool/otel sets one.
func (c *Connector) Observe(o *pool.Observer) { c.pool.Observe(o) }

// Reset closes every connection made before it, for when something made
// them all stale at once (a failover, a server demoted to read-only, a
// changed password you want every session to pick up), as pgxpool's Reset
// does: idle connections are closed now, connections in use when they are
// given back (database/sql gives one back when its *sql.Conn, *sql.Tx or
// *sql.Rows ends; a caller's transaction is not cut), and connections
// being opened when they arrive; none is handed out again, and no query
// fails because of it. New ones are dialed from the DSN (Pool.MinIdle
// refilled at once). They are counted in Stats().Destroys.Reset. It
// returns without waiting for them to close; on a closed Connector it does
// nothing. A Group member resets its own connections only.
func (c *Connector) Reset() {
	if c.role != nil {
		c.role.gen.Add(1) // a refusal on a connection made before resets nothing more
	}
	c.pool.Reset()
}

// Resize changes the pool's size while it runs: at most maxConns
// connections from now on (at least 1, at most the Config's
// Pool.MaxObjects, respool_max_conns, which the pool was made with: make
// it the most you may want, and Resize it down), and minIdle kept idle (0
// to maxConns; for a Group member at most its Config's Pool.MinIdle).
// Shrinking closes idle connections first, then connections given back
// while more than maxConns are open (Stats().Destroys.Resized), never one
// in use; growing serves the callers waiting at once. A bad value gets an
// error matching ErrInvalidConfig, with the *resilience.ConfigError naming
// it and what is accepted, and changes nothing; a closed Connector,
// pool.ErrClosed. A Group's MaxConns does not change. See pool.Pool.Resize.
func (c *Connector) Resize(maxConns, minIdle int) error {
	if err := c.pool.Resize(maxConns, minIdle); err != nil {
		if errors.As(err, new(*resilience.ConfigError)) {
			return fmt.Errorf("%w: %s: Resize: %w", ErrInvalidConfig, c.Name(), err)
		}
		return err
	}
	return nil
}

// ResilienceStats returns the statistics of the resilience around the pool:
// the breaker's state (Breaker.State) and counters, the pause, the retries
// and the connection attempts.
func (c *Connector) ResilienceStats() dbguard.Stats { return c.guard.Stats() }

// Close closes the pool; sql.DB.Close calls it. It returns at once, as database/sql does with the plain drivers:
// new takes fail with pool.ErrClosed, idle connections are closed, and
// connections still in use are closed as they come back (a lost one when the
// leak detector finds it). With Config.CloseTimeout it waits that long for
// the last connection to be closed, and returns the pool's error, matching
// context.DeadlineExceeded, if some are still in use then. The budget it
// opened for Config.SharedBudget is closed after the pool.
func (c *Connector) Close() error {
	c.retire()
	if c.closeTimeout <= 0 {
		c.pool.StartClose()
		return closeBudget(c.budget)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.closeTimeout)
	defer cancel()
	err := c.pool.Close(ctx)
	return errors.Join(err, closeBudget(c.budget))
}

// retire is what closing c does besides closing its pool (which a Group
// closes for all its members at once): its guard's pause timer stops.
func (c *Connector) retire() {
	c.guard.Close()
	if c.watch != nil {
		c.watch.close()
	}
}

// writableFound is called when the watch of the DSN's hosts finds one that
// takes writes after none did, before attempts are let through to it;
// refused says the watch refused attempts meanwhile (no listed server took
// writes for a while: a failover). What the old server caused holds
// nothing against the new one: a circuit that is not closed half-opens
// afresh, so that the next connection attempt goes through now rather
// than after the open delay the failed attempts set (or after a half-open
// spell that began long ago, whose HalfOpenMaxWait would reopen it); a
// pause (back-pressure) ends, its probe the next attempt; and the pool is
// reset, ending its hold of creations and its size lowered by
// back-pressure, when the watch refused attempts (its connections are to
// the servers that took no writes) or when it holds no connection. (A
// watch started by a lost connection on a primary that is well refuses
// none: its pool is left alone.)
func (c *Connector) writableFound(refused bool) {
	if b := c.guard.Breaker(); b != nil {
		if s := b.State(); s == breaker.Open || s == breaker.HalfOpen {
			_ = b.TransitionTo(breaker.HalfOpen)
		}
	}
	if p := c.guard.Pause(); p != nil {
		p.End()
	}
	if refused || c.pool.Stats().Total == 0 {
		c.pool.Reset()
	}
}

func driverLabel(cfg Config) string {
	if cfg.Connector != nil {
		return fmt.Sprintf("%T", cfg.Connector)
	}
	return cfg.DriverName
}
