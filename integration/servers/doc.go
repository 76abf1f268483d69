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
// "respool-secret" over TCP with password authentication. Server.Stop stops
// the server and deletes everything it created; Server.Restart (local servers)
// stops it as its own shutdown does, ending every session, and starts it again
// on the same address. A Proxy between clients and a server can stop
// forwarding, as a network path that drops every packet would. Local server processes also
// receive a termination signal when the test process dies (Linux), and
// directories left behind by crashed runs are removed by the next start.
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
