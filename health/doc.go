// Package health reports the health of respool pools and the resilience
// mechanisms in front of them, for people (a JSON report) and for load
// balancers (liveness and readiness answers).
//
// A service's main calls it, to serve /livez, /readyz and /health for its
// pools (FromConnector for a respool Connector, as examples/observability
// does; FromPool for a pool.Pool); the metrics/prometheus module reads a
// Checker's Sources for its Collector. No package of the library imports it.
//
// A Checker holds Sources by name: FromPool makes one for any *pool.Pool;
// its Breaker, Pause and Limiter fields add the state of those mechanisms
// when they guard the pool. FromConnector makes one for a database/sql
// Connector of package respool (any Guarded: its Stats, breaker and pause),
// probed by the *sql.DB's PingContext. Checker.Report returns typed
// values (counts, acquire-wait quantiles, the last creation error with
// passwords removed, breaker state); Report's JSON is a view of them.
// Checker.Ready probes every source within a short bound; Checker.Handler
// serves both over HTTP.
//
// Readiness means a query can be served now: the pool is not closed, its
// breaker is not open, its pause (the server's "slow down") does not hold,
// and its Probe (an object taken and given back, or a ping) succeeded
// within Config.ProbeTimeout.
// Liveness says only that the process answers: a database that is down
// must not get the process restarted.
//
// No report, answer or error carries a password: error texts lose the
// passwords of the DSNs they quote (URL user information, a mysql DSN's
// user:password@, password=... values), as respool's driver defines a
// secret, then pass through Config.Redact.
//
// This package reads packages pool and resilience; it does not import the
// driver, whose Connector it reads through the Guarded interface.
package health
