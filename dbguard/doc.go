// Package dbguard puts respool's resilience mechanisms around a database:
// the path by which connections are made, and the admission of the work
// done on them. The database/sql driver (package respool) builds one Guard
// per Connector; a pool of native connections (respool.PgxFactory, or any
// pool.Factory) gets the same path with Factory.
//
// # The creation path
//
// Connect (and a Factory's Create) makes a connection through, outermost
// first:
//
//   - a retry: a few attempts (3), with exponential delays and jitter,
//     within the creation's deadline, and only when nothing reached the
//     server (dbclass.IsConnectRetryable), never after back-pressure and
//     never once the circuit is open; the pool counts one failure per
//     creation and backs off as a whole on top of it;
//   - the circuit breaker, which rejects while the circuit is open and
//     records each attempt;
//   - the pause: a back-pressure error (the server is full or starting:
//     dbclass.BackPressure) closes it for everyone, for the time the error
//     names and longer if it comes right back; while it is closed a
//     creation is rejected at once (those that arrived while its probe ran
//     wait for the probe's outcome, and are rejected at once if the probe
//     closes it again);
//   - a connect-rate limiter (off by default), whose permits attempts wait
//     for.
//
// A rejection, and an attempt's failure that left the circuit open
// (*OpenedError), carry the time from which an attempt can succeed
// (resilience.RetryAfter). The pool holds its creations until then and
// fails the callers waiting for one at once (see pool.Config.BackoffInitial), so a
// dead server sees one attempt per open delay, however many callers there
// are.
//
// # The breaker
//
// One breaker sees every connection attempt and every statement (Enter and
// Exit around each call on a connection): a count window of the last 20
// calls opens the circuit when half of them failed at the connection level
// or timed out (dbclass.Classification.IsFailure, judged with the call's
// context by ClassifyContext). A caller's own errors (syntax, constraints,
// permissions) count as successes, since the server answered; a caller's
// cancellation, back-pressure and transaction conflicts are not failures,
// and driver.ErrBadConn is not recorded (database/sql runs the statement
// again on another connection, and that outcome counts). A statement that
// timed out counts only when it ran at least twice as long as the
// statements the server answered (a moving average): one whose caller's
// deadline came first, because it waited for its connection or the server
// is slow but answering, is not recorded. While the circuit
// is open, Check (before taking a connection from the pool) and Enter
// (before a statement) fail at once with a *resilience.RejectedError
// matching breaker.ErrOpen that carries when the next probe goes: callers
// of a dead or frozen server fail fast instead of waiting out their
// deadlines, including those that would have taken an idle connection.
// After the open delay (220ms) one call goes through as the probe, and the
// others are rejected until it ends: its success closes the circuit, its
// failure opens it again.
//
// # Defaults
//
// The breaker, the retry, the pause and the pool's back-pressure classifier
// (BackPressure) are on by default: each acts only on errors that mean the
// server cannot serve (a connection that failed, a timeout, "too many
// connections"), never on a caller's own errors, and each ends by itself
// within a fraction of a second of the server's recovery (the pause within
// its delay, at most 30s after repeated back-pressure). The connect-rate
// limiter and the breaker's slow-call threshold are off: both act on a
// healthy server (a limit makes callers wait; a workload of long queries
// would look slow). Every mechanism can be turned off in Config.
//
// The success path costs a statement one atomic load on Enter and a few on
// Exit (the breaker's count window writes nothing while it holds only
// successes), and a take one atomic load in Check.
//
// This package imports pool and resilience; pool does not import it.
package dbguard
