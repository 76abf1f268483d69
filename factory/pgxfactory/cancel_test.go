package pgxfactory

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/internal/pgxdial/pgxdialtest"
)

// TestCreateAfterAFailedStartupSendsNoCancelRequest: pgconn answers a
// connection that fails during its startup (asyncClose) with a cancel
// request, a second connection to the server, with no session key to
// cancel. Create refuses that dial: one connection attempt, one dial.
func TestCreateAfterAFailedStartupSendsNoCancelRequest(t *testing.T) {
	ln := pgxdialtest.ClosingServer(t)
	var dials atomic.Int32
	terminated := make(chan struct{}, 1)
	f := &Factory{Config: pgxdialtest.CountingConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &dials, terminated)}
	if c, err := f.Create(context.Background()); err == nil {
		_ = f.Destroy(c)
		t.Fatal("Create with a server that closes at once succeeded")
	}
	select {
	case <-terminated: // asyncClose is past its cancel request
	case <-time.After(10 * time.Second):
		t.Fatal("pgx sent no Terminate after the failed startup")
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for one failed Create; want 1 (no cancel request)", n)
	}
}

// TestCreatedConnectionSendsCancelRequests: once the startup finished, a
// cancel request is dialed as pgx means it; the factory's Config stays as
// it was.
func TestCreatedConnectionSendsCancelRequests(t *testing.T) {
	const pid = 4242
	cancels := make(chan uint32, 1)
	ln := pgxdialtest.StartupServer(t, pid, cancels)
	var dials atomic.Int32
	f := &Factory{Config: pgxdialtest.CountingConfig(t, "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable", &dials, make(chan struct{}, 1))}
	c, err := f.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Destroy(c)
	if err := c.PgConn().CancelRequest(context.Background()); err != nil {
		t.Fatalf("CancelRequest of a created connection: %v", err)
	}
	if got := <-cancels; got != pid {
		t.Errorf("the server got a cancel request for pid %d; want %d", got, pid)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials; want 2: the connection and its cancel request", n)
	}
	if f.Config.AfterConnect != nil {
		t.Error("Create changed the factory's Config")
	}
}
