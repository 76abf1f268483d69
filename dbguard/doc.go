// Package dbguard is the database half of respool's resilience: what an
// error from a PostgreSQL or MySQL/MariaDB call means (Classify), and the
// Guard that puts the mechanisms of package resilience around a database:
// the path by which connections are made, and the admission of the work
// done on them.
//
// Package respool builds one Guard per Connector; code that pools native
// connections gets the same path with Factory (a pool of
// respool.PgxFactory, or any pool.Factory); any code that needs to know
// what a database error means calls Classify, or gives IsTxRetryable to a
// retry as its RetryOn.
//
// # What an error means
//
// Classify maps an error to what it means for the mechanisms around the
// call: pause everyone, count it for a circuit breaker, retry the
// connection attempt, retry the whole transaction, report an unknown
// outcome, or leave it to the caller.
//
// Classify reads errors from pgx (*pgconn.PgError, *pgconn.ConnectError,
// pgconn.SafeToRetry, pgconn.Timeout), go-sql-driver/mysql
// (*mysql.MySQLError, mysql.ErrInvalidConn and the driver's other
// sentinels), net (dial errors, resets, timeouts), database/sql
// (driver.ErrBadConn, sql.ErrNoRows, ...) and context, however they are
// wrapped (fmt.Errorf %w, errors.Join, the drivers' own wrappers). The
// verdict, a Classification, has a Class and the bits the mechanisms need:
// NothingSent, Timeout, Canceled, and the Pause of a back-pressure error.
//
// What the mechanisms take from it:
//
//	BackPressure(err) (d, ok)               the pause's classifier: the server asks for less load for d
//	Classify(err).IsFailure()               the breaker's: connection-level, ambiguous, timeouts
//	Classify(err).IsConnectRetryable()      a connection attempt's retry: connection-level or back-pressure, nothing sent
//	IsTxRetryable(err)                      a whole-transaction retry (retry.Config.RetryOn): the transaction-retryable class only
//	fmt.Errorf("%w: %w", ErrAmbiguous, err) report an unknown outcome: Classify says ClassAmbiguous
//
// # Classes and codes
//
// A server's code decides first: PostgreSQL's SQLSTATE (an exact code
// before its two-character class), MySQL's and MariaDB's error number, then
// the SQLSTATE MySQL sends beside it.
//
//	back-pressure: pause for d; nothing ran
//	  PostgreSQL  53300 too_many_connections, 53400 configuration_limit_exceeded (1s)
//	              57P03 cannot_connect_now (100ms)
//	  MySQL       1040 too many connections, 1203 max_user_connections,
//	              1226 user resource exceeded, 1135 cannot create thread (1s)
//	connection: counts for the breaker; retried only when NothingSent
//	  PostgreSQL  class 08 except 08007; 57P01 admin_shutdown, 57P02 crash_shutdown,
//	              57P04 database_dropped, 57P05 idle_session_timeout,
//	              25P03 idle_in_transaction_session_timeout
//	  MySQL       1053 server shutdown, 1927 connection killed, 1129 host blocked,
//	              1152 1154-1161 1184 network errors, SQLSTATE class 08 (08S01);
//	              client 2002, 2003 (NothingSent), 2006, 2055
//	tx-retryable: retry the whole transaction
//	  PostgreSQL  40001 serialization_failure, 40P01 deadlock_detected, 55P03 lock_not_available
//	  MySQL       1213 deadlock, 1205 lock wait timeout, 3572 NOWAIT, 1614 XA deadlock
//	read-only: the server cannot take writes (a role, not the statement's fault)
//	  PostgreSQL  25006 read_only_sql_transaction
//	  MySQL       1290 naming --read-only or --super-read-only, 1792 read-only
//	              transaction, 1836 read-only mode, 1874 InnoDB read-only
//	ambiguous: outcome unknown; never retried; counts for the breaker
//	  PostgreSQL  08007 transaction_resolution_unknown, 40003 statement_completion_unknown
//	  MySQL       client 2013 lost connection during query
//	caller: the caller's own; not a failure
//	  PostgreSQL  classes 0A 0B 0L 0P 20 21 22 23 24 25 26 27 2B 2D 2F 34 38 39 3B 3D 3F
//	              42 44 54 P0 — syntax 42601, permission 42501, no table 42P01, unique 23505,
//	              foreign key 23503, not null 23502, check 23514, data 22xxx,
//	              no database 3D000, aborted transaction 25P02 — and 40002 (a deferred
//	              constraint at COMMIT)
//	  MySQL       syntax 1064 1149 1065; duplicate 1062 1586; foreign key 1451 1452 1216 1217;
//	              null or default 1048 1364; check 3819 4025; bad data 1264 1265 1292 1365 1366
//	              1406 1690; access 1044 1130 1142 1143 1227; database 1049 1046;
//	              objects 1146 1054 1050 1051; packet too large 1153; safe mode 1175;
//	              other numbers by SQLSTATE class as for PostgreSQL
//	caller with Auth: the credentials refused; a connection attempt refused so
//	opens the circuit at once (see Factory)
//	  PostgreSQL  28P01 invalid_password, 28000 invalid_authorization_specification
//	  MySQL       1045 access denied, 1698 no password (auth plugin)
//	statement stopped by the server: caller if cancelled, else other with Timeout
//	  PostgreSQL  57014 query_canceled
//	  MySQL       1317 query interrupted, 1969 max_statement_time, 3024 max_execution_time
//	other: any other code (53100 disk_full, 53200 out_of_memory, 58xxx, XX000, 40000, ...)
//
// 57014 and MySQL 1317/1969/3024 mean the server stopped the statement:
// the caller's cancellation (ClassCaller, Canceled) when the context was
// cancelled — seen in the chain, or given to ClassifyContext, which matters
// with pgx's CancelRequestContextWatcherHandler — and otherwise a statement
// timeout (ClassOther, Timeout), which a breaker counts.
//
// Without a server code, in this order:
//
//	context.Canceled in the chain (or the connection   caller, Canceled
//	  lost after ClassifyContext's ctx was cancelled)
//	ErrAmbiguous in the chain (a wrapper that knows    ambiguous
//	  the statement was sent)
//	sql.ErrNoRows, ErrTxDone, ErrConnDone;             caller
//	  pgconn.ParseConfigError; mysql ErrNoTLS,
//	  ErrPktTooLarge, ErrBusyBuffer, auth-plugin
//	  errors; TLS certificate verification errors
//	*pgconn.ConnectError; dial errors (*net.OpError    connection, NothingSent (Timeout if one)
//	  "dial", *net.DNSError, ECONNREFUSED)
//	a timeout (context.DeadlineExceeded,               Timeout; other if NothingSent,
//	  pgconn.Timeout, net.Error, ErrDeadlineExceeded,  else ambiguous
//	  resilience/timeout's ErrTimeout;
//	  or ctx past its deadline and the connection lost)
//	driver.ErrBadConn, pgconn.SafeToRetry              connection, NothingSent
//	io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,        ambiguous: a connection lost
//	  ECONNRESET, EPIPE, ECONNABORTED, a read or       after sending
//	  write *net.OpError, mysql.ErrInvalidConn,
//	  ErrMalformPkt, ErrPktSync, pgconn.ErrConnClosed
//	anything else                                      other
//
// # Classification decisions
//
// NothingSent is true only when a driver guarantees it: any error of a pgx
// connection attempt and dial errors (no statement exists yet),
// driver.ErrBadConn (database/sql's contract), pgconn.SafeToRetry, and every
// back-pressure error (the server refused the work before running any of
// it). pgconn's ErrConnClosed is the exception: pgconn v5.12.0 also returns
// it, as SafeToRetry, when the connection broke after an Exec without
// arguments was sent, so it is ambiguous here.
//
// Ambiguous errors count for the breaker: the connection broke. A bare
// context.DeadlineExceeded is ambiguous, since database/sql and
// go-sql-driver/mysql return it both before and after sending; a
// cancellation is the caller's even when the statement may have run
// (NothingSent false tells so). mysql.ErrInvalidConn is ambiguous because the
// driver returns it for any failed read, including one after the statement
// was written; 2013 (lost during query) is ambiguous for the same reason,
// though the client codes 2002-2013 are listed as connection-level in
// respool's design: it still counts for the breaker.
//
// Back-pressure does not count for the breaker (the pause handles it; a
// pool larger than the server's limit would otherwise open it), and neither
// do transaction conflicts, the caller's errors or unrecognised ones.
//
// # The pause of back-pressure
//
// No database says how long to wait. A "server full" error pauses for 1s:
// a slot frees only when another session ends, so a pool above the
// server's limit makes about one attempt a second, well below typical
// request deadlines. 57P03 pauses for 100ms: a starting server typically
// accepts within a fraction of a second, and a long pause would delay
// recovery after a restart. A pause that escalates on repeated signals
// stretches either (see BackPressure to choose other durations).
//
// # The creation path
//
// A Factory's Create makes a connection through, outermost first:
//
//   - a retry: a few attempts (3), with exponential delays and jitter,
//     within the creation's deadline, and only when nothing reached the
//     server (Classification.IsConnectRetryable), never after back-pressure and
//     never once the circuit is open; the pool counts one failure per
//     creation and backs off as a whole on top of it;
//   - the circuit breaker, which rejects while the circuit is open and
//     records each attempt;
//   - the pause: a back-pressure error (the server is full or starting:
//     BackPressure) closes it for everyone, for the time the error
//     names and longer if it comes right back; while it is closed a
//     creation is rejected at once (those that arrived while its probe ran
//     wait for the probe's outcome, and are rejected at once if the probe
//     closes it again);
//   - a connect-rate limiter (off by default), whose permits attempts wait
//     for; with Config.ConnectRateStore the rate is that of every Guard
//     given the store, in any process.
//
// Config.Join joins a Guard to those of other processes sharing its
// database: it is told the Guard's events and may act on the Guard
// (redisbudget.Share sends each process's pauses and open circuits to the
// others, which pause their creations as long).
//
// A rejection, and an attempt's failure that left the circuit open (the
// driver's error, matching breaker.ErrOpen too), carry the time from which
// an attempt can succeed (resilience.RetryAfter). The pool holds its
// creations until then and fails the callers waiting for one at once (see
// pool.Config.BackoffInitial), so a dead server sees one attempt per open
// delay, however many callers there are.
//
// # The breaker
//
// One breaker sees every connection attempt and every statement (Enter and
// Exit around each call on a connection): a count window of the last 20
// calls opens the circuit when half of them failed at the connection level
// or timed out (Classification.IsFailure, judged with the call's
// context by ClassifyContext). A caller's own errors (syntax, constraints,
// permissions) count as successes, since the server answered; a caller's
// cancellation, back-pressure and transaction conflicts are not failures,
// and driver.ErrBadConn is not recorded (database/sql runs the statement
// again on another connection, and that outcome counts). A statement that
// timed out counts only when it ran at least twice as long as the
// statements the server answered (a moving average): one whose caller's
// deadline came first, because it waited for its connection or the server
// is slow but answering, is not recorded. While the circuit
// is open, Admit (before taking a connection from the pool) and Enter
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
// successes), and a take one atomic load in Admit.
//
// This package imports pool and resilience; pool does not import it.
package dbguard
