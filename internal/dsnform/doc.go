// Package dsnform holds what respool's driver and chaos read alike in a
// DSN: which syntax it is in (a postgres URL, libpq keyword/value, or the
// mysql form), libpq's keyword/value tokens, the query of a mysql-form DSN,
// and the small helpers of their DSN errors (quoting a key or value,
// booleans, hiding passwords in an error).
package dsnform
