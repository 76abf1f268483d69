package dbguard

import (
	"strings"
	"time"
)

// Classification is the verdict on one error. The zero value is the verdict
// on a nil error.
type Classification struct {
	// Class is the error's class.
	Class Class
	// Code is the server's code the verdict rests on: the SQLSTATE for
	// PostgreSQL ("53300") or the error number for MySQL and MariaDB
	// ("1040"). Empty when no server error is in the chain.
	Code string
	// NothingSent reports that the failing operation certainly did not run
	// at the server: no byte of it was sent (a dial error, pgconn's
	// SafeToRetry, database/sql's driver.ErrBadConn, any error of a pgx
	// connection attempt), or the server refused it before running any of
	// it (every back-pressure error). Sending it again cannot run it twice.
	// False when in doubt.
	NothingSent bool
	// Timeout reports that a deadline or an I/O timeout ended the operation,
	// or that the server stopped the statement for running too long
	// (57014 query_canceled, MySQL 1317, 1969, 3024) when the caller's
	// context was not cancelled. Never set together with Canceled.
	Timeout bool
	// Canceled reports that the caller's context was cancelled
	// (context.Canceled). Such an error is always ClassCaller; NothingSent
	// still says whether the statement may have reached the server.
	Canceled bool
	// Pause is how long to hold new work back: positive exactly when Class
	// is ClassBackPressure: 1s for a server that is full (PostgreSQL
	// 53300, 53400; MySQL 1040, 1203, 1226, 1135), 100ms for PostgreSQL
	// 57P03 cannot_connect_now (starting, shutting down or recovering).
	Pause time.Duration
	// Auth reports that the server refused the credentials of a connection
	// attempt: PostgreSQL 28P01 invalid_password and 28000
	// invalid_authorization_specification (no such role, no pg_hba.conf
	// entry, a role that cannot log in), MySQL and MariaDB 1045 access
	// denied and 1698 (no password, or the authentication plugin refused).
	// Class is ClassCaller (the server answered; retrying the same
	// credentials cannot help); a Guard opens its circuit at once on a
	// connection attempt refused so (see Factory).
	Auth bool
}

// IsFailure reports whether the error counts as a failure for a circuit
// breaker: connection-level and ambiguous errors (the connection broke) and
// timeouts. The caller's own errors, cancellations, back-pressure (the
// pause handles it: counting it would open the breaker whenever the pool is
// larger than the server allows), transaction conflicts and unrecognised
// errors do not count.
func (c Classification) IsFailure() bool {
	return c.Class == ClassConnection || c.Class == ClassAmbiguous || c.Timeout
}

// IsConnectRetryable reports whether the failed attempt may be made again:
// the error is connection-level or back-pressure and nothing reached the
// server. It is the predicate for retrying connection attempts, and for
// re-sending a statement outside a transaction.
func (c Classification) IsConnectRetryable() bool {
	return c.NothingSent && (c.Class == ClassConnection || c.Class == ClassBackPressure)
}

// IsTxRetryable reports whether the whole transaction may be run again:
// the server rolled it back over a concurrency conflict. Ambiguous outcomes
// are never retryable.
func (c Classification) IsTxRetryable() bool {
	return c.Class == ClassTxRetryable
}

// String describes the verdict in one line, e.g.
// "back-pressure code=53300 nothing-sent pause=1s".
func (c Classification) String() string {
	var b strings.Builder
	b.WriteString(c.Class.String())
	if c.Code != "" {
		b.WriteString(" code=" + c.Code)
	}
	if c.NothingSent {
		b.WriteString(" nothing-sent")
	}
	if c.Timeout {
		b.WriteString(" timeout")
	}
	if c.Canceled {
		b.WriteString(" canceled")
	}
	if c.Auth {
		b.WriteString(" auth")
	}
	if c.Pause > 0 {
		b.WriteString(" pause=" + c.Pause.String())
	}
	return b.String()
}
