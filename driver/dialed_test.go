package driver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/internal/pgxdial/pgxdialtest"
)

// TestPgxFailedStartupSendsNoCancelRequest: pgconn answers a connection
// that fails during its startup (asyncClose) with a cancel request, a
// second connection to the server, with no session key to cancel. respool
// refuses that dial: one connection attempt, one dial.
func TestPgxFailedStartupSendsNoCancelRequest(t *testing.T) {
	for _, endWait := range []time.Duration{DefaultSessionEndWait, -1} {
		ln := pgxdialtest.ClosingServer(t)
		var dials atomic.Int32
		terminated := make(chan struct{}, 1)
		pc := pgxdialtest.CountingConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &dials, terminated)
		ctx, _ := withDialLog(context.Background())
		if _, err := pgxConnector(pc, DefaultCancelWait, endWait).Connect(ctx); err == nil {
			t.Fatal("Connect to a server that closes at once succeeded")
		}
		select {
		case <-terminated: // asyncClose is past its cancel request
		case <-time.After(10 * time.Second):
			t.Fatal("pgx sent no Terminate after the failed startup")
		}
		if n := dials.Load(); n != 1 {
			t.Errorf("SessionEndWait %v: %d dials for one failed connection attempt; want 1 (no cancel request)", endWait, n)
		}
	}
}

// TestPgxStartedConnectionSendsCancelRequests: once the startup finished,
// a cancel request is dialed as pgx means it.
func TestPgxStartedConnectionSendsCancelRequests(t *testing.T) {
	const pid = 4242
	cancels := make(chan uint32, 1)
	ln := pgxdialtest.StartupServer(t, pid, cancels)
	var dials atomic.Int32
	pc := pgxdialtest.CountingConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &dials, make(chan struct{}, 1))
	ctx, _ := withDialLog(context.Background())
	c, err := pgxConnector(pc, DefaultCancelWait, -1).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.(*stdlib.Conn).Conn().PgConn().CancelRequest(context.Background()); err != nil {
		t.Fatalf("CancelRequest of a started connection: %v", err)
	}
	if got := <-cancels; got != pid {
		t.Errorf("the server got a cancel request for pid %d; want %d", got, pid)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials; want 2: the connection and its cancel request", n)
	}
}
