package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind is what a Fault does to a call.
type Kind uint8

const (
	// KindLatency delays the call by Fault.Latency plus a random part of
	// Fault.Jitter, then lets it go on. A context that ends during the
	// delay goes on to the driver ended, which fails the call as the
	// driver fails a call whose context is done.
	KindLatency Kind = iota + 1
	// KindError fails the call with Fault.Err without calling the driver:
	// a *pgconn.PgError or *mysql.MySQLError (PgError, MySQLError) as the
	// server would send it. An error that ends the session on a real server
	// (a FATAL SQLSTATE such as 57P01, MySQL's 1053 or 1927) also closes the
	// connection. At connect, for the "pgx" and "mysql" drivers, the error
	// is sent by a stand-in server in place of the real one, so that the
	// driver returns it as it returns a real refusal (pgx: inside a
	// *pgconn.ConnectError).
	KindError
	// KindDrop breaks the connection: with Fault.AfterSend false, before
	// the call is sent, returning driver.ErrBadConn (database/sql then
	// retries on another connection); with AfterSend true, after the call
	// has run on the server, returning the driver's lost-connection error
	// (go-sql-driver/mysql's ErrInvalidConn, io.ErrUnexpectedEOF for pgx),
	// whose outcome the caller cannot know. The connection is closed and
	// database/sql discards it.
	KindDrop
	// KindRefuse fails a connection attempt with the dial error of a
	// closed port (ECONNREFUSED), returned as the driver returns it (pgx:
	// inside a *pgconn.ConnectError). Connect only.
	KindRefuse
	// KindFreeze blocks the call until its context ends, as on a server
	// or network that stopped answering, then closes the connection. For
	// "pgx" and "mysql" the network under the connection stops (chaos dials
	// for them) and the driver fails the call as it fails it on a real
	// frozen network; at connect, the driver meets a stand-in server that
	// accepts and never answers. Other drivers' calls return the context's
	// error. A call whose context cannot end is released when the Connector
	// is closed.
	KindFreeze
)

var kindNames = [...]string{KindLatency: "latency", KindError: "error", KindDrop: "drop",
	KindRefuse: "refuse", KindFreeze: "freeze"}

// String returns the kind's lower-case name: latency, error, drop, refuse,
// freeze.
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Op is a set of the calls a Fault applies to.
type Op uint16

const (
	OpConnect  Op = 1 << iota // a new connection (driver.Connector.Connect)
	OpExec                    // Exec on a connection or statement
	OpQuery                   // Query on a connection or statement
	OpPrepare                 // Prepare
	OpBegin                   // Begin of a transaction
	OpCommit                  // Commit
	OpRollback                // Rollback
	OpPing                    // Ping (database/sql's PingContext, a pool's test)
	OpReset                   // ResetSession, before database/sql reuses a connection
	opEnd

	// OpStatements is the default of every Kind but KindRefuse.
	OpStatements = OpExec | OpQuery
)

var opNames = []string{"connect", "exec", "query", "prepare", "begin", "commit", "rollback", "ping", "reset"}

// String returns the set's names joined by '|', such as "exec|query".
func (o Op) String() string {
	if o == 0 {
		return "none"
	}
	var names []string
	for i, name := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if o >= opEnd {
		names = append(names, fmt.Sprintf("Op(%#x)", uint16(o&^(opEnd-1))))
	}
	return strings.Join(names, "|")
}

// parseOps reads a comma-separated list of op names.
func parseOps(s string) (Op, bool) {
	var o Op
	for name := range strings.SplitSeq(s, ",") {
		i := slices.Index(opNames, strings.TrimSpace(strings.ToLower(name)))
		if i < 0 {
			return 0, false
		}
		o |= 1 << i
	}
	return o, true
}
