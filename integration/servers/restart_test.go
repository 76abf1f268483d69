package servers_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// TestRestart restarts each shared server: a session open before the
// restart is ended by it, and a new one works on the same address.
func TestRestart(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx := t.Context()
		db := open(t, s)
		db.SetMaxIdleConns(1)
		if err := db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		before := db.Stats().OpenConnections
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		// The old session is gone: database/sql retries on a new one.
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
			t.Fatalf("query after Restart = %d, %v", n, err)
		}
		if before != 1 {
			t.Errorf("%d connections open before the restart; want 1", before)
		}
	})
	plain := &servers.Server{Kind: servers.KindPostgres}
	if err := plain.Restart(t.Context()); err == nil {
		t.Error("Restart of a Server not started by the harness succeeded")
	}
}

// TestProxyStopsForwarding checks that a query through a stopped Proxy
// blocks until its context ends, and that it forwards again afterwards.
func TestProxyStopsForwarding(t *testing.T) {
	forEach(t, func(t *testing.T, s *servers.Server) {
		ctx := t.Context()
		p, err := servers.StartProxy(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		via := p.Server(s)
		db, err := sql.Open(via.DriverName(), via.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			t.Fatalf("ping through the proxy: %v", err)
		}

		p.StopForwarding()
		stalled, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		err = db.QueryRowContext(stalled, "SELECT 1").Scan(new(int))
		if err == nil {
			t.Fatal("a query through a proxy that does not forward succeeded")
		}
		if stalled.Err() == nil {
			t.Fatalf("the query failed (%v) before its context ended: the proxy should hold, not refuse", err)
		}

		p.Forward()
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
			t.Fatalf("query once the proxy forwards again: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.PingContext(ctx); err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("ping through a closed proxy = %v; want a connection error", err)
		}
	})
}
