// Package otel tests module github.com/respool/respool/otel on real
// PostgreSQL and MariaDB servers started on loopback: the semantic
// conventions' pool instruments follow the pool, and a pgx QueryTracer
// given through Config.PgxBeforeConnect sees the callers' contexts while
// respool's cancel handling stays on.
package otel
