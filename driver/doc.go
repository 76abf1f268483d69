// Package driver is respool as a database/sql driver: it wraps another
// database/sql driver (pgx and go-sql-driver/mysql out of the box, any
// registered driver by name) with respool's pool.
//
//	db, err := sql.Open("respool", "postgres://app@db/app?respool_max_conns=10")
//	db, err := sql.Open("respool", "app:pw@tcp(db:3306)/app?respool_max_conns=10")
//	db := sql.OpenDB(connector) // connector, err := driver.NewConnector(cfg)
//
// respool's keys (prefix respool_) configure the pool and are removed before
// the DSN reaches the real driver; see ParseDSN for the keys and how the real
// driver is chosen.
//
// # One pool, not two
//
// database/sql keeps its own list of idle connections on top of any driver.
// respool's connections report themselves invalid (driver.Validator) once
// database/sql is done with them, so database/sql closes them instead of
// keeping them, and closing one gives it back to respool's pool. The number of
// physical connections, the idle timeout, the wait queue and leak detection
// are respool's alone, and the pool's Stats (Connector.Stats) tell the truth.
// A Take refused because the wait queue is full reaches the caller of
// QueryContext as an error for which errors.Is(err, pool.ErrQueueFull) holds.
//
// # Errors
//
// Errors of the real driver reach the caller unchanged (errors.As(err,
// &pgErr), err.(*mysql.MySQLError) keep working), including those of a failed
// connection attempt. respool's own errors are respool's types.
package driver
