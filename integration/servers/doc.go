// Package servers starts throwaway PostgreSQL and MariaDB servers for the
// respool integration tests.
//
// StartPostgres and StartMariaDB use Docker through testcontainers-go when a
// Docker engine answers, and otherwise run the locally installed server
// binaries (initdb/postgres, mariadb-install-db/mariadbd) in a fresh
// temporary directory on a free 127.0.0.1 port. Setting
// RESPOOL_INTEGRATION_BACKEND to "docker" or "local" forces one backend.
// When neither backend is available the start functions return a one-line
// error naming what to install; tests must fail on it, never skip.
//
// Every server serves database "respool" to user "respool" with password
// "respool-secret" over TCP with password authentication; Options change
// its session limit (MaxConnections), make PostgreSQL log every connection
// (LogConnections), or demand the local binaries (Local). Server.Stop stops
// the server and deletes everything it created. On local servers, Restart
// stops it as its own shutdown does, ending every session, and starts it
// again on the same address; Kill ends every process of the server with
// SIGKILL, as a crash would, and Start starts it again; Freeze stops every
// process with SIGSTOP and Thaw lets them run (SIGCONT); LogPath names the
// server's log. A local PostgreSQL server can have a streaming standby
// (StartStandby: pg_basebackup -R, its own port), which Promote makes a
// primary; StopImmediate stops it as pg_ctl stop -m immediate does, a crash
// for its clients. On every server SetReadOnly makes the test user's writes
// refused, as on a demoted primary (PostgreSQL's
// default_transaction_read_only for the server, MariaDB's read_only), and
// back; CreateUser and SetPassword make a user and rotate its password
// (ALTER USER). AdminDSN reaches the server as a user who may change its
// settings and counters. A Proxy between clients and a server counts
// connection attempts and the connections it holds, can stop forwarding, as
// a network path that drops every packet would, and can delay every new
// connection, as a slow handshake would. Local server processes also receive a termination
// signal when the test process dies (Linux), and directories left behind by
// crashed runs are removed by the next start. Local servers listen on ports
// below the kernel's ephemeral range, so that no client's connection takes
// the port of a server that is down.
//
// A package that needs both servers for all of its tests wires them up once
// in TestMain:
//
//	var pg, maria *servers.Server
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(servers.WithServers(m, func(p, m *servers.Server) {
//			pg, maria = p, m
//		}))
//	}
//
// Local servers need a Unix-like OS; they are tested on Linux.
package servers
