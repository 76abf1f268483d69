package servers_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

// Shared servers for this package, started once by TestMain.
var pg, maria *servers.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(servers.WithServers(m, func(p, m *servers.Server) {
		pg, maria = p, m
	}))
}

// forEach runs fn as a subtest per shared server.
func forEach(t *testing.T, fn func(t *testing.T, s *servers.Server)) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) { fn(t, s) })
	}
}

func open(t *testing.T, s *servers.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open(s.DriverName(), s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSelectOne(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		t.Logf("%s on %s at %s, started in %v", s.Kind, s.Backend, s.Addr(), s.Startup)
		var n int
		if err := open(t, s).QueryRowContext(t.Context(), "SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("SELECT 1 = %d", n)
		}
	})
}

func TestCountConnections(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx := t.Context()
		counter := open(t, s)
		db := open(t, s)
		db.SetMaxOpenConns(5)
		const held = 3
		var conns []*sql.Conn
		for range held {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.CountConnections(ctx, counter)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("holding %d connections: CountConnections = %d", held, n)
		if n < held {
			t.Fatalf("CountConnections = %d, want >= %d", n, held)
		}

		// Once the connections are released and db is closed, the server
		// drops them.
		for _, c := range conns {
			c.Close()
		}
		db.Close()
		waitCount(t, s, counter, 0)
	})
}

// waitCount polls CountConnections until it returns want; servers drop
// closed connections asynchronously.
func waitCount(t *testing.T, s *servers.Server, db *sql.DB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := s.CountConnections(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CountConnections = %d, want %d", n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStop starts a second pair of servers, with options, and checks the
// options, then that Stop closes their ports and can be called again.
func TestStop(t *testing.T) {
	ctx := t.Context()
	const limit = 10 // MariaDB's smallest
	p, m, err := servers.StartBoth(ctx, servers.MaxConnections(limit), servers.LogConnections())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*servers.Server{p, m} {
		t.Cleanup(func() { s.Stop(context.Background()) })
	}
	for _, s := range []*servers.Server{p, m} {
		t.Run(s.Kind, func(t *testing.T) {
			t.Logf("%s on %s started in %v", s.Kind, s.Backend, s.Startup)
			if s.Addr() == pg.Addr() || s.Addr() == maria.Addr() {
				t.Fatalf("second server reuses a shared server's address %s", s.Addr())
			}
			db := open(t, s)
			var got int
			if err := db.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&got); s.Kind == servers.KindMariaDB && (err != nil || got != limit) {
				t.Errorf("MaxConnections(%d): max_connections = %d, %v", limit, got, err)
			}
			if s.Kind == servers.KindPostgres {
				if err := db.QueryRowContext(ctx, "SELECT current_setting('max_connections')::int").Scan(&got); err != nil || got != limit {
					t.Errorf("MaxConnections(%d): max_connections = %d, %v", limit, got, err)
				}
				if b, err := os.ReadFile(s.LogPath()); err != nil || !strings.Contains(string(b), "connection authorized: user="+s.User) {
					t.Errorf("LogConnections: no connection in the log (%v)", err)
				}
			}
			if err := s.Freeze(); err != nil { // Stop must end a frozen server too
				t.Fatal(err)
			}
			start := time.Now()
			if err := s.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("stopped in %v", time.Since(start))
			if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
				c.Close()
				t.Fatalf("%s still accepts connections after Stop", s.Addr())
			}
			if err := s.Stop(ctx); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
		})
	}
}

func TestCountConnectionsUnknownKind(t *testing.T) {
	s := &servers.Server{Kind: "oracle"}
	if _, err := s.CountConnections(t.Context(), nil); err == nil {
		t.Fatal("CountConnections with unknown kind succeeded")
	}
}

func TestDSN(t *testing.T) {
	s := &servers.Server{Kind: servers.KindPostgres, Host: "127.0.0.1", Port: 5432,
		User: "u", Password: "p w", Database: "d"}
	if got, want := s.DSN(), "postgres://u:p%20w@127.0.0.1:5432/d?sslmode=disable"; got != want {
		t.Errorf("postgres DSN = %q, want %q", got, want)
	}
	s.Kind, s.Password = servers.KindMariaDB, "pw"
	if got, want := s.DSN(), "u:pw@tcp(127.0.0.1:5432)/d?parseTime=true"; got != want {
		t.Errorf("mariadb DSN = %q, want %q", got, want)
	}
}
