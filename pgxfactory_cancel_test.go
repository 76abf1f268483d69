package respool

import (
	"context"
	"testing"

	"github.com/respool/respool/internal/pgxdial/pgxdialtest"
)

// TestPgxFactoryCreateAfterAFailedStartupSendsNoCancelRequest: pgconn
// answers a connection that fails during its startup (asyncClose) with a
// cancel request, a second connection to the server, with no session key to
// cancel. Create refuses that dial: one connection attempt, one dial.
func TestPgxFactoryCreateAfterAFailedStartupSendsNoCancelRequest(t *testing.T) {
	s := pgxdialtest.NewFailedStartup(t)
	f := PgxFactory(s.Config)
	if c, err := f.Create(context.Background()); err == nil {
		_ = f.Destroy(c)
		t.Fatal("Create with a server that closes at once succeeded")
	}
	s.ExpectNoCancelRequest(t)
}

// TestPgxFactoryCreatedConnectionSendsCancelRequests: once the startup
// finished, a cancel request is dialed as pgx means it; the ConnConfig given
// to PgxFactory stays as it was.
func TestPgxFactoryCreatedConnectionSendsCancelRequests(t *testing.T) {
	s := pgxdialtest.NewStarted(t)
	f := PgxFactory(s.Config)
	c, err := f.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Destroy(c)
	s.ExpectCancelRequest(t, c.PgConn())
	if s.Config.AfterConnect != nil {
		t.Error("Create changed the ConnConfig")
	}
}
