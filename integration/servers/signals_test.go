package servers_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// hold opens db's connection and returns it, pinged; it is closed when the
// test ends.
func hold(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PingContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestKillAndStart kills each shared server, frozen: a session open before
// is ended, new connections are refused at once (not left to time out),
// and Start brings the server back on the same address.
func TestKillAndStart(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx := t.Context()
		db := open(t, s)
		before := hold(t, db)
		if err := s.Freeze(); err != nil {
			t.Fatal(err)
		}
		if err := s.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		if err := before.PingContext(ctx); err == nil {
			t.Error("a session open before Kill still answers")
		}
		if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
			c.Close()
			t.Fatalf("%s accepts connections after Kill", s.Addr())
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection to the killed server timed out (%v); want it refused", err)
		}
		if err := s.Kill(ctx); err == nil {
			t.Error("Kill of a killed server succeeded")
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err == nil {
			t.Error("Start of a running server succeeded")
		}
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatalf("query after Start: %v", err)
		}
	})
	plain := &servers.Server{Kind: servers.KindPostgres}
	for name, f := range map[string]func() error{
		"Kill":   func() error { return plain.Kill(t.Context()) },
		"Start":  func() error { return plain.Start(t.Context()) },
		"Freeze": plain.Freeze,
		"Thaw":   plain.Thaw,
	} {
		if f() == nil {
			t.Errorf("%s of a Server not started by the harness succeeded", name)
		}
	}
}

// TestFreezeAndThaw freezes each shared server: a session open before
// answers nothing (PostgreSQL's backends are frozen too, not only the
// server's first process), nor does a new connection; after Thaw the same
// session answers again.
func TestFreezeAndThaw(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx := t.Context()
		before := hold(t, open(t, s))
		if err := s.Freeze(); err != nil {
			t.Fatal(err)
		}
		thawed := false
		t.Cleanup(func() {
			if !thawed {
				_ = s.Thaw()
			}
		})
		// A ping ends with its deadline: pgx's driver reports that as a bad
		// connection, so the test looks at how long it took.
		const wait = 300 * time.Millisecond
		waited := func(c interface{ PingContext(context.Context) error }) (time.Duration, error) {
			short, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			start := time.Now()
			err := c.PingContext(short)
			return time.Since(start), err
		}
		if took, err := waited(before); err == nil || took < wait*9/10 {
			t.Errorf("ping on a session open before Freeze = %v after %v; want no answer until its deadline", err, took)
		}
		fresh := open(t, s)
		if took, err := waited(fresh); err == nil || took < wait*9/10 {
			t.Errorf("ping on a new connection to a frozen server = %v after %v; want no answer until its deadline", err, took)
		}
		if err := s.Thaw(); err != nil {
			t.Fatal(err)
		}
		thawed = true
		if err := fresh.PingContext(ctx); err != nil {
			t.Fatalf("new connection after Thaw: %v", err)
		}
	})
}

// TestProxyCountsAttempts checks that a Proxy counts the connections it
// accepts, and resets them at once when its target refuses.
func TestProxyCountsAttempts(t *testing.T) {
	s := pg
	p, err := servers.StartProxy(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	db := open(t, p.Server(s))
	db.SetMaxIdleConns(0) // a connection per query
	for range 3 {
		if err := db.QueryRowContext(t.Context(), "SELECT 1").Scan(new(int)); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Accepted(); n != 3 {
		t.Errorf("Accepted = %d after three connections; want 3", n)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	dead, err := servers.StartProxy(closed)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	// The reset may come before the client's connect returns.
	c, err := net.DialTimeout("tcp", dead.Addr(), 5*time.Second)
	if err == nil {
		defer c.Close()
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a connection through a proxy whose target refuses: %v; want it reset", err)
	}
	if n := dead.Accepted(); n != 1 {
		t.Errorf("Accepted = %d; want 1", n)
	}
}

// TestAdminDSN checks that the admin DSN may read and reset the server's
// counters, and that LogPath names the server's log.
func TestAdminDSN(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		db, err := sql.Open(s.DriverName(), s.AdminDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		reset := "SELECT pg_stat_reset()"
		if s.Kind == servers.KindMariaDB {
			reset = "FLUSH STATUS"
		}
		if _, err := db.ExecContext(t.Context(), reset); err != nil {
			t.Fatalf("%s as the admin: %v", reset, err)
		}
		if b, err := os.ReadFile(s.LogPath()); err != nil || len(b) == 0 {
			t.Errorf("LogPath %q: %d bytes, %v", s.LogPath(), len(b), err)
		}
	})
}
