// Package dbclass holds the tests of dbguard's classification against real
// PostgreSQL and MariaDB servers started by package servers: each test makes
// a server send a real error (a refused dial, a syntax error, a unique
// violation, a serialization failure, a deadlock, too many connections, a
// terminated backend, a cancelled or timed-out query, a connection lost
// after the statement was sent) and checks its classification.
package dbclass
