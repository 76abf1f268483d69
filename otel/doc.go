// Package respoolotel records the metrics of respool's pools with
// OpenTelemetry: the semantic conventions' db.client.connection.*
// instruments, and respool's own (respool.*). It is a module of its own, so
// that the OpenTelemetry API stays out of the respool module's
// dependencies. Import it under its package name:
//
//	import respoolotel "github.com/respool/respool/otel"
//
//	db, c, err := respool.OpenDB(dsn)
//	stop, err := respoolotel.Instrument("orders", health.FromConnector(c, db.PingContext), respoolotel.Config{})
//	defer stop()
//
// Any pool.Pool is instrumented the same way with health.FromPool. With
// Config.TracerProvider it makes spans too, under the callers' spans: a
// take's wait (respool.take) and the opening of a connection for it
// (respool.create); statements' spans are the real driver's tracer's (a
// pgx QueryTracer such as otelpgx's, given in respool.Config's
// PgxBeforeConnect) or otelsql's.
//
// Through respool, sql.DB.Stats counts database/sql's handles, not the
// connections to the server: dashboards built on it (otelsql's
// RegisterDBStatsMetrics, Prometheus' DBStatsCollector) read a
// respool.Connector's DBStats instead, or these instruments.
package respoolotel
