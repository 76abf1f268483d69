// Package dbbudget tests module github.com/respool/respool/dbbudget on a
// real PostgreSQL and MariaDB started on loopback: the connections of
// several pools sharing one budget never number more than it at the
// server; a holder whose coordinating session is killed, or whose process
// is killed with SIGKILL, frees its slots within a second; a session lost
// neither blocks an Acquire nor lets the sum grow, and is taken again;
// the fair share moves slots from a holder to a process that needs them;
// a DSN through PgBouncer is refused; and Share's signals (LISTEN/NOTIFY)
// make one process's back-pressure or dead server stop the others dialing
// within a second.
package dbbudget
