// Package pgbouncer tests respool behind PgBouncer in transaction pooling
// mode (respool_pgbouncer=transaction), side by side with pgx's
// database/sql driver and pgxpool in pgx's exec mode, on a PostgreSQL and a
// PgBouncer the harness starts on loopback ports (see
// servers.StartPgBouncer): ad-hoc queries, prepared statements,
// transactions and cancelled statements from more goroutines than
// PgBouncer has server connections; the refusal of init SQL; the warning
// respool logs when it meets a PgBouncer it was not told of.
package pgbouncer
