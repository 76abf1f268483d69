package servers

import (
	"fmt"
	"os"
	"strconv"
)

// defaultMaxConnections is every server's session limit unless
// MaxConnections says otherwise.
const defaultMaxConnections = 200

// An Option changes how StartPostgres, StartMariaDB or StartBoth start a
// server.
type Option func(*options)

// options are the settings Options change; the zero value is not used:
// newOptions fills in the defaults.
type options struct {
	maxConnections int
	logConnections bool
	localOnly      bool
}

func newOptions(opts []Option) options {
	o := options{maxConnections: defaultMaxConnections}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// MaxConnections sets the server's session limit (PostgreSQL's and
// MariaDB's max_connections; default 200). PostgreSQL's test user is a
// superuser and may use all n sessions; MariaDB keeps one more for a
// SUPER user, which the test user is not, and accepts no n below 10.
func MaxConnections(n int) Option {
	return func(o *options) { o.maxConnections = n }
}

// LogConnections makes a PostgreSQL server log every connection and
// disconnection (log_connections, log_disconnections) in the log that
// Server.LogPath names. MariaDB servers are unaffected: their connection
// counters (SHOW GLOBAL STATUS) say the same.
func LogConnections() Option {
	return func(o *options) { o.logConnections = true }
}

// Local starts the server from the local binaries even when a Docker
// engine answers, for tests that signal the server's processes (Kill,
// Freeze), which only local servers support. It fails like
// RESPOOL_INTEGRATION_BACKEND=local when the binaries are missing, and
// fails when that variable demands Docker.
func Local() Option {
	return func(o *options) { o.localOnly = true }
}

// backendDocker reports whether to start the server in Docker.
func (o options) backendDocker() (bool, error) {
	if !o.localOnly {
		return useDocker()
	}
	switch b := os.Getenv(BackendEnv); b {
	case "", BackendLocal:
		return false, nil
	default:
		return false, fmt.Errorf("integration: %s=%q, but these servers must run from the local binaries (servers.Local)", BackendEnv, b)
	}
}

// postgresSettings returns the -c name=value pairs of a PostgreSQL server.
func (o options) postgresSettings() []string {
	// The test user is a superuser: slots reserved for superusers change
	// nothing for it, and would stop max_connections from going below 4.
	s := []string{"-c", "max_connections=" + strconv.Itoa(o.maxConnections), "-c", "superuser_reserved_connections=0",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"}
	if o.logConnections {
		// log_line_prefix names each session's process, which pairs a
		// connection with its disconnection.
		s = append(s, "-c", "log_connections=on", "-c", "log_disconnections=on",
			"-c", "log_line_prefix=%m [%p] ")
	}
	return s
}

// mariadbSettings returns mariadbTuning with the options applied.
func (o options) mariadbSettings() []string {
	return append(append([]string(nil), mariadbTuning...), "--max-connections="+strconv.Itoa(o.maxConnections))
}
