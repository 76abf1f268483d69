// Package respool is a database/sql driver with a resilient pool: it wraps
// another database/sql driver (pgx and go-sql-driver/mysql out of the box,
// any registered driver by name) with respool's pool.
//
// Applications call it: sql.Open("respool", dsn), or OpenDB and
// NewConnector to keep the Connector (ConnectorOf finds it behind a
// *sql.DB), RunInTx around transactions, NewGroup for several databases
// under one budget. Package health reads a Connector's Stats, Breaker and
// Pause (FromConnector), and the metrics/prometheus module reads them
// through health; no other package of the library imports it.
//
//	db, err := sql.Open("respool", "postgres://app@db/app?respool_max_conns=10")
//	db, err := sql.Open("respool", "app:pw@tcp(db:3306)/app?respool_max_conns=10")
//	db := sql.OpenDB(connector) // connector, err := respool.NewConnector(cfg)
//
// Importing the package registers the driver "respool"; a program that only
// opens DSNs imports it blank: _ "github.com/respool/respool".
//
// respool's keys (prefix respool_) configure the pool and are removed before
// the DSN reaches the real driver; see ParseDSN for the keys and how the real
// driver is chosen.
//
// # One pool, not two
//
// database/sql keeps its own list of idle connections on top of any driver.
// A respool connection holds a real connection only while database/sql uses
// it: when database/sql puts it in its idle list (driver.Validator), the real
// connection goes back to respool's pool and database/sql keeps an empty
// shell; when database/sql reuses the shell (driver.SessionResetter), it takes
// a connection from the pool again. The number of physical connections, the
// idle timeout, the wait queue and leak detection are respool's alone, and the
// pool's Stats (Connector.Stats) tell the truth; sql.DB.Stats counts shells.
//
// # Reuse and give-back
//
// A connection taken from the pool's idle connections (whether used before
// or made by the pool on its own, for MinIdle) is checked first, with the
// caller's context, by the real driver's ResetSession (pgx pings a
// connection that idled and refuses one left inside a transaction;
// go-sql-driver/mysql notices a connection the server closed); one it
// refuses is closed and the pool looks for another, so that sessions the
// server ended (a restart, pg_terminate_backend, KILL, an idle timeout) fail
// no query. The pool runs the check as its pool.Factory's BeforeHandOut: it
// ends with the caller's context or after the pool's TestTimeout, whichever
// comes first. A connection made for the caller is not checked. Giving a
// connection back does no I/O, so it cannot hang on a network that stopped.
//
// sql.DB.Close returns at once, as it does with the plain drivers: idle
// connections are closed, connections in use are closed as they come back,
// and a lost one when the leak detector finds it. Config.CloseTimeout
// (respool_close_timeout) makes Close wait for the last one, within that
// bound.
//
// # database/sql's settings
//
// sql.DB's own settings act on database/sql's shells, not on connections:
//
//   - SetMaxOpenConns limits connections in use, but callers past it wait
//     in database/sql's own queue, unbounded and unseen by respool; use the
//     pool's MaxObjects and MaxQueueSize (respool_max_conns,
//     respool_max_queue).
//   - SetMaxIdleConns, SetConnMaxLifetime and SetConnMaxIdleTime close
//     shells only; the connection stays in the pool. Use MaxIdle, MinIdle,
//     MaxLifetime (respool_max_idle_time, respool_min_idle,
//     respool_max_lifetime).
//   - sql.DB.Stats counts shells (its InUse is the connections in use);
//     Connector.Stats counts connections.
//
// # Prepared statements
//
// A statement prepared through database/sql (*sql.Stmt) stays prepared on
// each physical connection it is used on: each connection keeps a cache of
// at most 128 statements by query (the least recently used is closed past
// that), so a *sql.Stmt is prepared at most once per physical connection,
// whichever of database/sql's shells runs it. When the last *sql.Stmt of a
// query is closed, the statement is closed on the connection in hand at
// once, and on each other connection when it is next taken or, idle, tested
// (every ValidationInterval); a connection's statements end with it.
//
// # Leaks
//
// database/sql keeps every connection it has open reachable, so a leak made
// through it is found in one of two ways, both on by default (a report names
// the code that took the connection when Pool.LeakCaptureStack is set):
//
//   - A *sql.Rows (or a *sql.Row never scanned) dropped without Close, from a
//     query whose context cannot end, is found by the garbage collector:
//     while rows are open, the pool's Handle is held by respool's rows, which
//     only the *sql.Rows reaches. Within two collections (the pool's actor
//     having had its turn between them) it is reported as LEAK-DETECTED
//     (with the stack of the code that ran the query, respool_leak_stack), its
//     connection is closed and its slot freed. (database/sql closes the
//     rows of a query whose context can end when that context ends.)
//   - A *sql.Tx or *sql.Conn never ended stays reachable inside database/sql
//     (the Tx's goroutine watching its context; the DB's list of open
//     connections), so no collector finds it: it is reported once as
//     HELD-TOO-LONG when held past Pool.HoldThreshold
//     (5m by default on this path; respool_leak_threshold=off,
//     a negative threshold in code, turns the report off), and keeps its
//     connection.
//
// # The real connection
//
// sql.Conn.Raw passes respool's connection to its function; RawConn returns
// the real driver's as the type asked for: RawConn[*pgx.Conn](dc) for
// CopyFrom or LISTEN/NOTIFY, RawConn[driver.Conn](dc) for
// go-sql-driver/mysql's, whose type is unexported.
//
// # Finding the pools
//
// OpenDB returns the Connector with its *sql.DB; for a *sql.DB from
// sql.Open, ConnectorOf returns it, for its Stats, ResilienceStats, Breaker
// and Pause:
//
//	db, err := sql.Open("respool", "postgres://app@db/app")
//	c, err := respool.ConnectorOf(db)
//	stats := c.Stats()
//
// # Several databases, one budget
//
// A Group is one connection budget shared by several databases: each member
// is a Connector of its own (Group.Connector(key, cfg), for sql.OpenDB), and
// the connections of every member together never exceed GroupConfig.MaxConns;
// a member that needs a connection while the budget is spent gets the slot of
// another's idle connection, or of the next one another gives back (see
// Group and pool.Keyed).
//
// # Errors
//
// Errors of the real driver reach the caller unchanged (errors.As(err,
// &pgErr), err.(*mysql.MySQLError) keep working), including those of a failed
// connection attempt. respool's own errors are respool's types. A Take
// refused because the wait queue is full reaches the caller of QueryContext
// as an error for which errors.Is(err, pool.ErrQueueFull) holds; one that
// waited Pool.AcquireTimeout (respool_acquire_timeout) in vain as an error
// matching pool.ErrAcquireTimeout that names the bound; one whose context
// ended as the context's error. A call waits once: when database/sql reuses
// one of its idle shells and the take fails, respool returns the failure
// from the shell's first call instead of driver.ErrBadConn, on which
// database/sql would try twice more, waiting each time. So sql.DB.Conn can
// return a *sql.Conn that got no connection: its calls return that error;
// close it and ask again.
package respool
