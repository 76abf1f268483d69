// Package chaos is a database/sql driver that wraps another one (pgx,
// go-sql-driver/mysql, any registered driver) and injects faults into its
// calls, so that an application's tests, and respool's, can rehearse what a
// failing database does without breaking a server: added latency, server
// errors by SQLSTATE or MySQL error number, connections dropped before or
// after a statement was sent, refused connection attempts and calls that
// never return. Each fault hits at a rate (a probability), every Nth call,
// within time windows, or when switched on at run time, and the random
// draws are repeatable: the same seed hits the same calls.
//
// Tests call it, an application's and respool's (the root package's tests,
// integration/chaos, examples/demo and examples/txretry), when they want a
// database to fail on purpose: sql.Open("chaos", dsn), or
// respool_driver=chaos under respool, with Lookup to reach the Connector. No
// package of the library imports it.
//
//	db, err := sql.Open("chaos", "postgres://app:pw@db/app?chaos_error=40001&chaos_error_rate=0.1&chaos_seed=7")
//	db, err := sql.Open("chaos", "app:pw@tcp(db:3306)/app?chaos_drop=after&chaos_drop_every=50")
//	db := sql.OpenDB(connector) // connector, err := chaos.NewConnector(chaos.Config{...})
//
// The chaos_ keys are removed before the DSN reaches the wrapped driver;
// ParseDSN lists them. Under respool, name chaos as respool's driver, and
// respool's pool, retries and breaker meet the faults:
//
//	import _ "github.com/respool/respool/chaos" // registers "chaos"
//	db, err := sql.Open("respool", "postgres://app:pw@db/app?respool_driver=chaos&chaos_driver=pgx&chaos_refuse_rate=0.5")
//
// respool backs off connection attempts for the pool as a whole after one
// fails (callers meanwhile get that failure at once), so a connect fault
// switched on or off at run time shows at the pool's next attempt.
//
// # Faithful errors
//
// An injected fault returns the value the wrapped driver returns for the
// real fault, so that code under test (and resilience/dbclass) sees no
// difference:
//
//	fault                      pgx (database/sql)                 go-sql-driver/mysql
//	error (statement)          *pgconn.PgError                    *mysql.MySQLError
//	connect_error              *pgconn.ConnectError{PgError}      *mysql.MySQLError
//	refuse                     *pgconn.ConnectError{dial error}   *net.OpError (dial, ECONNREFUSED)
//	drop=before                driver.ErrBadConn                  driver.ErrBadConn
//	drop=after                 io.ErrUnexpectedEOF                mysql.ErrInvalidConn
//	freeze (statement)         pgx's timeout error, or the        the context's error
//	                           context's error
//	connect_freeze             *pgconn.ConnectError{timeout}      the context's error
//
// Network faults of pgx and mysql happen inside the driver: chaos dials for
// them (pgx.ConnConfig.DialFunc, mysql.Config.DialFunc). A connection attempt
// gets the dial error, or a connection to a stand-in server in memory that
// never answers or that refuses the session with the fault's error; a frozen
// statement stops the network under its connection, so that no byte passes
// either way. The driver then builds its own error value. Another driver's
// connection attempts get the fault's error as it is (a *net.OpError for
// refuse), and its frozen calls the context's error.
//
// An error that ends the session on a real server (FATAL SQLSTATEs such as
// 57P01, MySQL's 1053 and 1927), a drop and a freeze close the connection;
// it then fails every call with driver.ErrBadConn and database/sql
// discards it. A drop after sending runs the call on the server first: the
// statement took effect, and the caller cannot know it.
//
// What chaos does not imitate: an injected statement error leaves the
// server's transaction as it was (a real PostgreSQL error aborts it, and a
// real deadlock rolls it back), so roll back on error as real code must;
// pgx turns a connection lost under a statement without arguments into
// driver.ErrBadConn, on which database/sql sends it again (see
// integration/dbclass), whereas drop=after always reports the lost
// connection; and with sslmode=require a connect_error reaches pgx as a
// refused TLS request, since the stand-in server speaks no TLS.
//
// # Time
//
// Latency waits on Config.Clock, which a test moves by hand
// (clock/clocktest), and is counted in Stats. A frozen call waits for
// its context, or for Connector.Close when the context cannot end.
package chaos
