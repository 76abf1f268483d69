package dbguard

// sqlstateRule returns the rule for a SQLSTATE: PostgreSQL's codes, and
// the standard ones MySQL and MariaDB send beside their error numbers.
// A code listed on its own wins over its class (its first two characters).
func sqlstateRule(code string) rule {
	switch code {
	case "53300", // too_many_connections
		"53400": // configuration_limit_exceeded
		return ruleFull
	case "57P03": // cannot_connect_now: starting up, shutting down, in recovery
		return ruleStartup
	case "08007", // transaction_resolution_unknown
		"40003": // statement_completion_unknown
		return ruleAmbiguous
	case "57P01", // admin_shutdown (pg_terminate_backend, fast or smart shutdown)
		"57P02", // crash_shutdown
		"57P04", // database_dropped
		"57P05", // idle_session_timeout
		"25P03": // idle_in_transaction_session_timeout
		return ruleConnection
	case "40001", // serialization_failure
		"40P01", // deadlock_detected
		"55P03": // lock_not_available (NOWAIT, lock_timeout)
		return ruleTxRetryable
	case "40002": // transaction_integrity_constraint_violation (a deferred constraint at COMMIT)
		return ruleCaller
	case "25006": // read_only_sql_transaction: a standby, default_transaction_read_only, or MySQL's 1792
		return ruleReadOnly
	case "57014": // query_canceled: a cancel request or statement_timeout
		return ruleStatementCanceled
	case "28P01", // invalid_password
		"28000": // invalid_authorization_specification: no such role, no pg_hba.conf entry, role cannot log in
		return ruleAuth
	}
	if len(code) != 5 {
		return ruleNone
	}
	switch code[:2] {
	case "08": // connection exception
		return ruleConnection
	case "0A", // feature not supported
		"0B",       // invalid transaction initiation
		"0L", "0P", // invalid grantor, invalid role specification
		"20",       // case not found
		"21",       // cardinality violation
		"22",       // data exception
		"23",       // integrity constraint violation (23505 unique, 23503 foreign key, ...)
		"24",       // invalid cursor state
		"25",       // invalid transaction state (25P02: statements in an aborted transaction)
		"26",       // invalid SQL statement name
		"27",       // triggered data change violation
		"28",       // invalid authorization specification (28000 and 28P01: ruleAuth, above)
		"2B",       // dependent privilege descriptors still exist
		"2D",       // invalid transaction termination
		"2F",       // SQL routine exception
		"34",       // invalid cursor name
		"38", "39", // external routine exception, invocation
		"3B", // savepoint exception
		"3D", // invalid catalog name (the database does not exist)
		"3F", // invalid schema name
		"42", // syntax error or access rule violation (42601 syntax, 42501 permission, 42P01 no table)
		"44", // WITH CHECK OPTION violation
		"54", // program limit exceeded (statement too complex)
		"P0": // PL/pgSQL: RAISE EXCEPTION, assert failure, no data found
		return ruleCaller
	}
	return ruleNone
}
