package chaos

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

var (
	// ErrInvalidConfig is matched (errors.Is) by every error of
	// NewConnector about the Config, and of ParseDSN and sql.Open("chaos",
	// dsn) about the DSN: each names the field or key, its value and what
	// is accepted.
	ErrInvalidConfig = errors.New("chaos: invalid Config")
	// ErrClosed is returned by Connect after Close.
	ErrClosed = errors.New("chaos: connector closed")
)

// InjectedDetail is the Detail of every *pgconn.PgError that PgError builds,
// so that a test can tell an injected error from a real one.
const InjectedDetail = "injected by github.com/respool/respool/chaos"

// pgCodes has PostgreSQL's severity and message for common SQLSTATEs.
var pgCodes = map[string][2]string{
	"40001": {"ERROR", "could not serialize access due to concurrent update"},
	"40P01": {"ERROR", "deadlock detected"},
	"55P03": {"ERROR", "could not obtain lock on row"},
	"57014": {"ERROR", "canceling statement due to statement timeout"},
	"23505": {"ERROR", "duplicate key value violates unique constraint"},
	"23503": {"ERROR", "insert or update violates foreign key constraint"},
	"42601": {"ERROR", "syntax error"},
	"42P01": {"ERROR", "relation does not exist"},
	"53100": {"ERROR", "could not extend file: No space left on device"},
	"53200": {"ERROR", "out of memory"},
	"53300": {"FATAL", "sorry, too many clients already"},
	"53400": {"FATAL", "configuration limit exceeded"},
	"57P01": {"FATAL", "terminating connection due to administrator command"},
	"57P02": {"FATAL", "terminating connection because of crash of another server process"},
	"57P03": {"FATAL", "the database system is starting up"},
	"57P05": {"FATAL", "terminating connection due to idle-session timeout"},
	"25P03": {"FATAL", "terminating connection due to idle-in-transaction timeout"},
	"28P01": {"FATAL", "password authentication failed"},
	"3D000": {"FATAL", "database does not exist"},
	"08006": {"FATAL", "connection failure"},
	"XX000": {"ERROR", "internal error"},
}

// PgError returns the *pgconn.PgError a PostgreSQL server sends for the
// SQLSTATE code, with the server's severity and message for common codes
// (FATAL for those that end the session: class 08, 57P01-57P05, 53300,
// 28P01, ...) and Detail InjectedDetail. It panics if code is not five
// digits or upper-case letters; ParseCode checks a code first.
func PgError(code string) *pgconn.PgError {
	if !isSQLState(code) {
		panic(fmt.Sprintf("chaos: PgError(%q): a SQLSTATE is five digits or upper-case letters", code))
	}
	sev, msg := "ERROR", "injected error"
	if known, ok := pgCodes[code]; ok {
		sev, msg = known[0], known[1]
	} else if strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") {
		sev = "FATAL"
	}
	return &pgconn.PgError{Severity: sev, SeverityUnlocalized: sev, Code: code, Message: msg, Detail: InjectedDetail}
}

func isSQLState(code string) bool {
	if len(code) != 5 {
		return false
	}
	for i := range len(code) {
		if c := code[i]; !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// mysqlCode is what MySQL and MariaDB send for an error number.
type mysqlCode struct {
	state string
	msg   string
	fatal bool // the server closes the session
}

var mysqlCodes = map[uint16]mysqlCode{
	1040: {state: "08004", msg: "Too many connections"},
	1203: {state: "42000", msg: "User already has more than 'max_user_connections' active connections"},
	1226: {state: "42000", msg: "User has exceeded the 'max_user_connections' resource"},
	1129: {state: "HY000", msg: "Host is blocked because of many connection errors"},
	1045: {state: "28000", msg: "Access denied for user"},
	1213: {state: "40001", msg: "Deadlock found when trying to get lock; try restarting transaction"},
	1205: {state: "HY000", msg: "Lock wait timeout exceeded; try restarting transaction"},
	1062: {state: "23000", msg: "Duplicate entry for key 'PRIMARY'"},
	1064: {state: "42000", msg: "You have an error in your SQL syntax"},
	1146: {state: "42S02", msg: "Table doesn't exist"},
	1317: {state: "70100", msg: "Query execution was interrupted"},
	1969: {state: "70100", msg: "Query execution was interrupted (max_statement_time exceeded)"},
	1053: {state: "08S01", msg: "Server shutdown in progress", fatal: true},
	1927: {state: "70100", msg: "Connection was killed", fatal: true},
	1152: {state: "08S01", msg: "Aborted connection", fatal: true},
	1184: {state: "08S01", msg: "Aborted connection", fatal: true},
}

// MySQLError returns the *mysql.MySQLError that MySQL and MariaDB send for
// the error number, with the server's SQLSTATE and message for common
// numbers (HY000 and a generic message for others).
func MySQLError(number uint16) *mysql.MySQLError {
	c, ok := mysqlCodes[number]
	if !ok {
		c = mysqlCode{state: "HY000", msg: "injected error"}
	}
	e := &mysql.MySQLError{Number: number, Message: c.msg}
	copy(e.SQLState[:], c.state)
	return e
}

// parseCode reads a server error code as the DSN key chaos_error does:
// "pg:CODE" (a SQLSTATE), "mysql:NUMBER", or a bare code read for the
// wrapped driver's flavour.
func parseCode(s string, fl flavor) (error, bool) {
	if rest, ok := strings.CutPrefix(s, "pg:"); ok {
		s, fl = rest, flavorPostgres
	} else if rest, ok := strings.CutPrefix(s, "mysql:"); ok {
		s, fl = rest, flavorMySQL
	}
	switch fl {
	case flavorPostgres:
		if isSQLState(s) {
			return PgError(s), true
		}
	case flavorMySQL:
		if n, err := strconv.ParseUint(s, 10, 16); err == nil && n > 0 && s[0] != '+' {
			return MySQLError(uint16(n)), true
		}
	}
	return nil, false
}

// endsSession reports whether a real server closes the session after
// sending err.
func endsSession(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC"
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return mysqlCodes[myErr.Number].fatal
	}
	return false
}

// cloneError returns a copy of a *pgconn.PgError or *mysql.MySQLError, and
// any other error as it is.
func cloneError(err error) error {
	switch e := err.(type) {
	case *pgconn.PgError:
		c := *e
		return &c
	case *mysql.MySQLError:
		c := *e
		return &c
	}
	return err
}

// flavor is which driver's errors a Connector imitates.
type flavor uint8

const (
	flavorOther flavor = iota
	flavorPostgres
	flavorMySQL
)

func flavorOfName(name string) flavor {
	switch name {
	case "pgx":
		return flavorPostgres
	case "mysql":
		return flavorMySQL
	}
	return flavorOther
}

// flavorOf tells a driver's flavour by its type.
func flavorOf(d driver.Driver) flavor {
	switch d.(type) {
	case *stdlib.Driver:
		return flavorPostgres
	case *mysql.MySQLDriver, mysql.MySQLDriver:
		return flavorMySQL
	}
	return flavorOther
}

// lostError is the error a driver returns when the connection broke after
// the call was sent: what pgx's database/sql driver and
// go-sql-driver/mysql return when the server's answer never comes.
func lostError(fl flavor) error {
	switch fl {
	case flavorPostgres:
		return io.ErrUnexpectedEOF
	case flavorMySQL:
		return mysql.ErrInvalidConn
	}
	return fmt.Errorf("chaos: connection lost after sending: %w", io.ErrUnexpectedEOF)
}

// refusedError is the dial error of a closed port, for network and addr
// (addr may be empty).
func refusedError(network, addr string) error {
	e := &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		e.Addr = net.TCPAddrFromAddrPort(ap)
	}
	return e
}
