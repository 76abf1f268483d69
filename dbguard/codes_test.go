package dbguard_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
)

// wrappings are the ways an error reaches the caller: as the driver returns
// it (database/sql passes driver errors through unchanged), wrapped by the
// application, and joined with a later error (a failed rollback).
var wrappings = []struct {
	name string
	wrap func(error) error
}{
	{"bare", func(err error) error { return err }},
	{"wrapped", func(err error) error { return fmt.Errorf("store order 7: %w", err) }},
	{"joined", func(err error) error { return errors.Join(err, errors.New("rollback failed")) }},
}

type codeCase struct {
	code        string
	class       dbguard.Class
	nothingSent bool
	timeout     bool
	auth        bool
	pause       time.Duration
}

const (
	full    = time.Second
	startup = 100 * time.Millisecond
)

// TestPostgresCodes classifies every SQLSTATE of the table in doc.go as
// *pgconn.PgError, the type pgx returns for an ErrorResponse.
func TestPostgresCodes(t *testing.T) {
	cases := []codeCase{
		// back-pressure
		{code: "53300", class: dbguard.ClassBackPressure, nothingSent: true, pause: full},    // too_many_connections
		{code: "53400", class: dbguard.ClassBackPressure, nothingSent: true, pause: full},    // configuration_limit_exceeded
		{code: "57P03", class: dbguard.ClassBackPressure, nothingSent: true, pause: startup}, // cannot_connect_now
		// connection-level: class 08 and the server ending the session
		{code: "08000", class: dbguard.ClassConnection},
		{code: "08001", class: dbguard.ClassConnection},
		{code: "08003", class: dbguard.ClassConnection},
		{code: "08004", class: dbguard.ClassConnection},
		{code: "08006", class: dbguard.ClassConnection},
		{code: "08P01", class: dbguard.ClassConnection},
		{code: "57P01", class: dbguard.ClassConnection}, // admin_shutdown
		{code: "57P02", class: dbguard.ClassConnection}, // crash_shutdown
		{code: "57P04", class: dbguard.ClassConnection}, // database_dropped
		{code: "57P05", class: dbguard.ClassConnection}, // idle_session_timeout
		{code: "25P03", class: dbguard.ClassConnection}, // idle_in_transaction_session_timeout
		// transaction-retryable
		{code: "40001", class: dbguard.ClassTxRetryable}, // serialization_failure
		{code: "40P01", class: dbguard.ClassTxRetryable}, // deadlock_detected
		{code: "55P03", class: dbguard.ClassTxRetryable}, // lock_not_available
		// ambiguous
		{code: "08007", class: dbguard.ClassAmbiguous}, // transaction_resolution_unknown
		{code: "40003", class: dbguard.ClassAmbiguous}, // statement_completion_unknown
		// the caller's own
		{code: "42601", class: dbguard.ClassCaller},             // syntax_error
		{code: "42501", class: dbguard.ClassCaller},             // insufficient_privilege
		{code: "42P01", class: dbguard.ClassCaller},             // undefined_table
		{code: "42703", class: dbguard.ClassCaller},             // undefined_column
		{code: "23505", class: dbguard.ClassCaller},             // unique_violation
		{code: "23503", class: dbguard.ClassCaller},             // foreign_key_violation
		{code: "23502", class: dbguard.ClassCaller},             // not_null_violation
		{code: "23514", class: dbguard.ClassCaller},             // check_violation
		{code: "22P02", class: dbguard.ClassCaller},             // invalid_text_representation
		{code: "22012", class: dbguard.ClassCaller},             // division_by_zero
		{code: "22001", class: dbguard.ClassCaller},             // string_data_right_truncation
		{code: "21000", class: dbguard.ClassCaller},             // cardinality_violation
		{code: "28P01", class: dbguard.ClassCaller, auth: true}, // invalid_password
		{code: "28000", class: dbguard.ClassCaller, auth: true}, // invalid_authorization_specification
		{code: "3D000", class: dbguard.ClassCaller},             // invalid_catalog_name: no such database
		{code: "25P02", class: dbguard.ClassCaller},             // in_failed_sql_transaction
		{code: "25006", class: dbguard.ClassReadOnly},           // read_only_sql_transaction
		{code: "40002", class: dbguard.ClassCaller},             // transaction_integrity_constraint_violation
		{code: "0A000", class: dbguard.ClassCaller},             // feature_not_supported
		{code: "54001", class: dbguard.ClassCaller},             // statement_too_complex
		{code: "P0001", class: dbguard.ClassCaller},             // raise_exception
		// a statement the server stopped, the caller's context not known to be cancelled
		{code: "57014", class: dbguard.ClassOther, timeout: true}, // query_canceled
		// not recognised: server trouble that is not about connections
		{code: "53100", class: dbguard.ClassOther}, // disk_full
		{code: "53200", class: dbguard.ClassOther}, // out_of_memory
		{code: "58030", class: dbguard.ClassOther}, // io_error
		{code: "XX000", class: dbguard.ClassOther}, // internal_error
		{code: "40000", class: dbguard.ClassOther}, // transaction_rollback
		{code: "55000", class: dbguard.ClassOther}, // object_not_in_prerequisite_state
	}
	for _, tc := range cases {
		pgErr := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: tc.code, Message: "message " + tc.code}
		checkCode(t, pgErr, tc)
	}
}

func mysqlError(number uint16, state string, message string) *mysql.MySQLError {
	e := &mysql.MySQLError{Number: number, Message: message}
	copy(e.SQLState[:], state)
	return e
}

// TestMySQLCodes classifies every error number of the table in doc.go as
// *mysql.MySQLError with the SQLSTATE the servers send beside it (none for
// errors sent before the handshake, and for the client's 2xxx numbers).
func TestMySQLCodes(t *testing.T) {
	cases := []struct {
		err *mysql.MySQLError
		codeCase
	}{
		{mysqlError(1040, "08004", "Too many connections"), codeCase{class: dbguard.ClassBackPressure, nothingSent: true, pause: full}},
		{mysqlError(1040, "", "Too many connections"), codeCase{class: dbguard.ClassBackPressure, nothingSent: true, pause: full}},
		{mysqlError(1203, "42000", "User respool already has more than 'max_user_connections' active connections"), codeCase{class: dbguard.ClassBackPressure, nothingSent: true, pause: full}},
		{mysqlError(1226, "42000", "User 'respool' has exceeded the 'max_user_connections' resource (current value: 1)"), codeCase{class: dbguard.ClassBackPressure, nothingSent: true, pause: full}},
		{mysqlError(1135, "HY000", "Can't create a new thread (errno 11)"), codeCase{class: dbguard.ClassBackPressure, nothingSent: true, pause: full}},

		{mysqlError(1053, "08S01", "Server shutdown in progress"), codeCase{class: dbguard.ClassConnection}},
		{mysqlError(1927, "70100", "Connection was killed"), codeCase{class: dbguard.ClassConnection}},
		{mysqlError(1129, "HY000", "Host '127.0.0.1' is blocked because of many connection errors"), codeCase{class: dbguard.ClassConnection}},
		{mysqlError(1158, "08S01", "Got an error reading communication packets"), codeCase{class: dbguard.ClassConnection}},
		{mysqlError(1047, "08S01", "Unknown command"), codeCase{class: dbguard.ClassConnection}}, // by its SQLSTATE
		{mysqlError(2002, "", "Can't connect to local server through socket"), codeCase{class: dbguard.ClassConnection, nothingSent: true}},
		{mysqlError(2003, "", "Can't connect to server on '127.0.0.1'"), codeCase{class: dbguard.ClassConnection, nothingSent: true}},
		{mysqlError(2006, "", "Server has gone away"), codeCase{class: dbguard.ClassConnection}},
		{mysqlError(2013, "", "Lost connection to server during query"), codeCase{class: dbguard.ClassAmbiguous}},

		{mysqlError(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction"), codeCase{class: dbguard.ClassTxRetryable}},
		{mysqlError(1205, "HY000", "Lock wait timeout exceeded; try restarting transaction"), codeCase{class: dbguard.ClassTxRetryable}},
		{mysqlError(3572, "HY000", "Statement aborted because lock(s) could not be acquired immediately and NOWAIT is set."), codeCase{class: dbguard.ClassTxRetryable}},

		{mysqlError(1290, "HY000", "The MariaDB server is running with the --read-only option so it cannot execute this statement"), codeCase{class: dbguard.ClassReadOnly}},
		{mysqlError(1290, "HY000", "The MariaDB server is running with the --read-only=ON option so it cannot execute this statement"), codeCase{class: dbguard.ClassReadOnly}},
		{mysqlError(1290, "HY000", "The MySQL server is running with the --super-read-only option so it cannot execute this statement"), codeCase{class: dbguard.ClassReadOnly}},
		{mysqlError(1290, "HY000", "The MySQL server is running with the --secure-file-priv option so it cannot execute this statement"), codeCase{class: dbguard.ClassOther}},
		{mysqlError(1792, "25006", "Cannot execute statement in a READ ONLY transaction"), codeCase{class: dbguard.ClassReadOnly}},
		{mysqlError(1836, "HY000", "Running in read-only mode"), codeCase{class: dbguard.ClassReadOnly}},
		{mysqlError(1874, "HY000", "InnoDB is in read only mode"), codeCase{class: dbguard.ClassReadOnly}},

		{mysqlError(1064, "42000", "You have an error in your SQL syntax"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1062, "23000", "Duplicate entry '1' for key 'PRIMARY'"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1452, "23000", "Cannot add or update a child row: a foreign key constraint fails"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1451, "23000", "Cannot delete or update a parent row: a foreign key constraint fails"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1142, "42000", "SELECT command denied to user 'respool'@'localhost' for table 'user'"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1045, "28000", "Access denied for user 'respool'@'localhost' (using password: YES)"), codeCase{class: dbguard.ClassCaller, auth: true}},
		{mysqlError(1698, "28000", "Access denied for user 'root'@'localhost'"), codeCase{class: dbguard.ClassCaller, auth: true}},
		{mysqlError(1133, "28000", "Can't find any matching row in the user table"), codeCase{class: dbguard.ClassCaller}}, // SET PASSWORD: not a login
		{mysqlError(1044, "42000", "Access denied for user 'respool'@'%' to database 'mysql'"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1049, "42000", "Unknown database 'nope'"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1048, "23000", "Column 'name' cannot be null"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1364, "HY000", "Field 'name' doesn't have a default value"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1366, "22007", "Incorrect integer value: 'x' for column 'n' at row 1"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1406, "22001", "Data too long for column 'name' at row 1"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(3819, "HY000", "Check constraint 'c' is violated."), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(4025, "23000", "CONSTRAINT `c` failed for `respool`.`t`"), codeCase{class: dbguard.ClassCaller}},
		{mysqlError(1109, "42S02", "Unknown table 't' in MULTI DELETE"), codeCase{class: dbguard.ClassCaller}}, // by its SQLSTATE

		{mysqlError(1317, "70100", "Query execution was interrupted"), codeCase{class: dbguard.ClassOther, timeout: true}},
		{mysqlError(1969, "70100", "Query execution was interrupted (max_statement_time exceeded)"), codeCase{class: dbguard.ClassOther, timeout: true}},
		{mysqlError(1093, "HY000", "Table 't' is specified twice"), codeCase{class: dbguard.ClassOther}},
		{mysqlError(1021, "HY000", "Disk full; waiting for someone to free some space"), codeCase{class: dbguard.ClassOther}},
	}
	for _, tc := range cases {
		tc.code = fmt.Sprint(tc.err.Number)
		checkCode(t, tc.err, tc.codeCase)
	}
}

// checkCode checks the verdict on a server error in every wrapping.
func checkCode(t *testing.T, serverErr error, tc codeCase) {
	t.Helper()
	want := dbguard.Classification{Class: tc.class, Code: tc.code, NothingSent: tc.nothingSent, Timeout: tc.timeout, Auth: tc.auth, Pause: tc.pause}
	for _, w := range wrappings {
		err := w.wrap(serverErr)
		if got := dbguard.Classify(err); got != want {
			t.Errorf("Classify(%s %q) = %v, want %v", w.name, err, got, want)
		}
	}
}
