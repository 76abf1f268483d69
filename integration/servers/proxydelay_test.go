package servers_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// TestProxyConnectDelay checks that a connection through a Proxy with a
// connect delay takes at least that long to open, and that Open and
// PeakOpen count the connections the proxy holds.
func TestProxyConnectDelay(t *testing.T) {
	const delay = 200 * time.Millisecond
	ctx := t.Context()
	p, err := servers.StartProxy(pg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetConnectDelay(delay)
	via := p.Server(pg)
	db, err := sql.Open(via.DriverName(), via.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var conns []*sql.Conn
	for range 2 {
		start := time.Now()
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < delay {
			t.Errorf("a connection through the proxy opened in %v; want at least the delay, %v", took, delay)
		}
		conns = append(conns, c)
	}
	if open, peak := p.Open(), p.PeakOpen(); open != 2 || peak != 2 {
		t.Errorf("2 connections open: Open %d, PeakOpen %d; want 2, 2", open, peak)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	bound, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	servers.WaitFor(t, bound, "Open 0 once every connection closed", func() (bool, error) { return p.Open() == 0, nil })
	if peak := p.PeakOpen(); peak != 2 {
		t.Errorf("PeakOpen %d after the connections closed; want 2", peak)
	}
}
