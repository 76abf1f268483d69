package dbguard

import (
	"strings"

	"github.com/go-sql-driver/mysql"
)

// mysqlRule returns the rule for a MySQL or MariaDB error: by its number
// first, since some numbers share a SQLSTATE with errors of another class
// (1203 and 1226 are 42000 like a syntax error; MariaDB sends 1040 with
// 08004, a connection-class SQLSTATE, and MySQL with none, since it comes
// before the handshake); then by its SQLSTATE.
func mysqlRule(e *mysql.MySQLError) rule {
	switch e.Number {
	case 1040, // ER_CON_COUNT_ERROR: too many connections
		1203, // ER_TOO_MANY_USER_CONNECTIONS: max_user_connections
		1226, // ER_USER_LIMIT_REACHED: a user resource (max_user_connections, max_questions, ...)
		1135: // ER_CANT_CREATE_THREAD: out of threads for a new connection
		return ruleFull
	case 2002, // CR_CONNECTION_ERROR: cannot connect (socket)
		2003: // CR_CONN_HOST_ERROR: cannot connect (TCP)
		return ruleConnectFailed
	case 1053, // ER_SERVER_SHUTDOWN
		1129,       // ER_HOST_IS_BLOCKED: too many connection errors from this host
		1152, 1184, // ER_ABORTING_CONNECTION, ER_NEW_ABORTING_CONNECTION
		1154, 1155, 1156, 1157, 1158, 1159, 1160, // ER_NET_*: read, write, packet order errors
		1161,       // ER_NET_WRITE_INTERRUPTED
		1927,       // ER_CONNECTION_KILLED (MariaDB: KILL CONNECTION)
		2006, 2055: // CR_SERVER_GONE_ERROR, CR_SERVER_LOST_EXTENDED
		return ruleConnection
	case 2013: // CR_SERVER_LOST: lost connection during query, after it was sent
		return ruleAmbiguous
	case 1213, // ER_LOCK_DEADLOCK: the transaction was rolled back
		1205, // ER_LOCK_WAIT_TIMEOUT (also MariaDB's NOWAIT)
		3572, // ER_LOCK_NOWAIT (MySQL 8)
		1614: // ER_XA_RBDEADLOCK
		return ruleTxRetryable
	case 1045, // ER_ACCESS_DENIED_ERROR: wrong user or password
		1698: // ER_ACCESS_DENIED_NO_PASSWORD_ERROR: no password given, or the auth plugin refused
		return ruleAuth
	case 1792, // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
		1836, // ER_READ_ONLY_MODE
		1874: // ER_INNODB_READ_ONLY
		return ruleReadOnly
	case 1290: // ER_OPTION_PREVENTS_STATEMENT: --read-only, --super-read-only, or another option
		if readOnlyOption(e.Message) {
			return ruleReadOnly
		}
	case 1317, // ER_QUERY_INTERRUPTED: KILL QUERY, or the client's cancel
		1969, // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
		3024: // ER_QUERY_TIMEOUT (MySQL max_execution_time)
		return ruleStatementCanceled
	case 1064, 1149, 1065, // ER_PARSE_ERROR, ER_SYNTAX_ERROR, ER_EMPTY_QUERY
		1062, 1586, // ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME
		1451, 1452, 1216, 1217, // foreign key violations
		1048, 1364, // ER_BAD_NULL_ERROR, ER_NO_DEFAULT_FOR_FIELD
		3819, 4025, // check constraint violated (MySQL, MariaDB)
		1264, 1265, 1292, 1365, 1366, 1406, 1690, // out of range, truncated, bad value, division by zero, too long
		1044,       // database access denied
		1049, 1046, // unknown database, no database selected
		1130,             // ER_HOST_NOT_PRIVILEGED
		1142, 1143, 1227, // table, column, operation access denied
		1146, 1054, 1050, 1051, // no such table, unknown column, table exists, unknown table
		1153, // ER_NET_PACKET_TOO_LARGE: the statement exceeds max_allowed_packet
		1175: // ER_UPDATE_WITHOUT_KEY_IN_SAFE_MODE
		return ruleCaller
	}
	if e.SQLState == ([5]byte{}) {
		return ruleNone
	}
	if r := sqlstateRule(string(e.SQLState[:])); r != ruleAuth {
		return r
	}
	return ruleCaller // 28000 of another number (1133 from SET PASSWORD): not a login refused
}

// readOnlyOption reports whether a 1290's message names the option that
// makes the server read-only ("running with the --read-only option",
// "--super-read-only", MariaDB's "--read-only=ON"), rather than another
// option (--secure-file-priv, --skip-grant-tables, ...).
func readOnlyOption(msg string) bool {
	return strings.Contains(msg, "read-only") || strings.Contains(msg, "read_only")
}
