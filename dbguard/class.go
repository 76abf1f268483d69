package dbguard

import "strconv"

// Class is what an error means for the mechanisms around a database call.
// The classes are disjoint: every error falls in exactly one.
type Class uint8

const (
	// ClassNone is the class of a nil error.
	ClassNone Class = iota
	// ClassOther is an error none of the rules recognise, and a statement
	// stopped by a timeout whose outcome is known (see Classification.Timeout).
	// It is neither retried nor, unless it is a timeout, a breaker failure.
	ClassOther
	// ClassBackPressure: the server refused new work because it is full or
	// not ready ("too many connections", "starting up"). Everyone should
	// hold off for Classification.Pause; nothing ran at the server.
	ClassBackPressure
	// ClassConnection: the connection failed or could not be made (dial
	// errors, class 08, the server shutting the session down). Counts for a
	// circuit breaker; retried only when Classification.NothingSent.
	ClassConnection
	// ClassTxRetryable: the server rolled the transaction back because of
	// concurrency (serialization failure, deadlock, lock not available).
	// Retry the whole transaction, never one statement inside it.
	ClassTxRetryable
	// ClassAmbiguous: the statement may or may not have taken effect (the
	// connection was lost after it was sent, 08007, 40003). Never retried;
	// report it to the caller as an unknown outcome. Counts for a breaker.
	ClassAmbiguous
	// ClassCaller: the caller's own error (syntax, constraint violation,
	// permission, bad data, wrong credentials, a cancelled context). Not a
	// failure of the database: a breaker ignores it, retrying cannot help.
	ClassCaller
	// ClassReadOnly: the server cannot take writes (a standby, a primary
	// demoted to read-only, MySQL's --read-only): PostgreSQL 25006, MySQL
	// and MariaDB 1290 (--read-only, --super-read-only), 1792 (a read-only
	// transaction), 1836 (read-only mode), 1874 (InnoDB read-only). It is a
	// role of the server, not a fault of the statement: a pool for writes
	// should leave that server's connections (respool does), and a write
	// may be sent again on a connection made anew. Not a breaker failure.
	// A caller's own read-only transaction gets the same codes.
	ClassReadOnly
)

var classNames = [...]string{
	ClassNone:         "none",
	ClassOther:        "other",
	ClassBackPressure: "back-pressure",
	ClassConnection:   "connection",
	ClassTxRetryable:  "tx-retryable",
	ClassAmbiguous:    "ambiguous",
	ClassCaller:       "caller",
	ClassReadOnly:     "read-only",
}

// String returns the class's stable lower-case name, as used in logs:
// none, other, back-pressure, connection, tx-retryable, ambiguous, caller,
// read-only.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}
