// Package dbclass maps an error from a PostgreSQL or MySQL/MariaDB call to
// what it means for the resilience mechanisms around the call: pause
// everyone, count it for a circuit breaker, retry the connection attempt,
// retry the whole transaction, report an unknown outcome, or leave it to
// the caller.
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
// Adapters for the mechanisms:
//
//	BackPressure(err) (d, ok)   the pause's classifier: the server asks for less load for d
//	IsFailure(err)              the breaker's: connection-level, ambiguous, timeouts
//	IsConnectRetryable(err)     a connection attempt's retry: connection-level or back-pressure, nothing sent
//	IsTxRetryable(err)          a whole-transaction retry: the transaction-retryable class only
//	MarkAmbiguous(err)          report an unknown outcome: errors.Is(err, ErrAmbiguous)
//
// # Classes and codes
//
// A server's code decides first: PostgreSQL's SQLSTATE (an exact code
// before its two-character class), MySQL's and MariaDB's error number, then
// the SQLSTATE MySQL sends beside it.
//
//	back-pressure: pause for d; nothing ran
//	  PostgreSQL  53300 too_many_connections, 53400 configuration_limit_exceeded (Pause)
//	              57P03 cannot_connect_now (StartupPause)
//	  MySQL       1040 too many connections, 1203 max_user_connections,
//	              1226 user resource exceeded, 1135 cannot create thread (Pause)
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
//	ambiguous: outcome unknown; never retried; counts for the breaker
//	  PostgreSQL  08007 transaction_resolution_unknown, 40003 statement_completion_unknown
//	  MySQL       client 2013 lost connection during query
//	caller: the caller's own; not a failure
//	  PostgreSQL  classes 0A 0B 0L 0P 20 21 22 23 24 25 26 27 28 2B 2D 2F 34 38 39 3B 3D 3F
//	              42 44 54 P0 — syntax 42601, permission 42501, no table 42P01, unique 23505,
//	              foreign key 23503, not null 23502, check 23514, data 22xxx, password 28P01,
//	              no database 3D000, aborted transaction 25P02 — and 40002 (a deferred
//	              constraint at COMMIT)
//	  MySQL       syntax 1064 1149 1065; duplicate 1062 1586; foreign key 1451 1452 1216 1217;
//	              null or default 1048 1364; check 3819 4025; bad data 1264 1265 1292 1365 1366
//	              1406 1690; access 1044 1045 1698 1130 1142 1143 1227; database 1049 1046;
//	              objects 1146 1054 1050 1051; packet too large 1153; safe mode 1175;
//	              other numbers by SQLSTATE class as for PostgreSQL
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
//	ErrAmbiguous in the chain (MarkAmbiguous, or a     ambiguous
//	  wrapper that knows the statement was sent)
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
// # Decisions
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
// # The pause
//
// No database says how long to wait. Config.Pause (default 1s) applies to
// "server full" errors: a slot frees only when another session ends, so a
// pool above the server's limit makes about one attempt a second, well
// below typical request deadlines. Config.StartupPause (default 100ms)
// applies to 57P03: a starting server typically accepts within a fraction
// of a second, and a long pause would delay recovery after a restart. A
// pause mechanism that escalates on repeated signals stretches either.
package dbclass
