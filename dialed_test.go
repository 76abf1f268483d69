package respool

import (
	"context"
	"fmt"
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
	for _, endWait := range []time.Duration{defaultSessionEndWait, -1} {
		t.Run(fmt.Sprintf("SessionEndWait=%v", endWait), func(t *testing.T) {
			s := pgxdialtest.NewFailedStartup(t)
			ctx, _ := withDialLog(context.Background())
			if _, err := pgxConnector(s.Config, pgxPieces{cancelWait: defaultCancelWait, endWait: endWait}, nil).Connect(ctx); err == nil {
				t.Fatal("Connect to a server that closes at once succeeded")
			}
			s.ExpectNoCancelRequest(t)
		})
	}
}

// TestPgxStartedConnectionSendsCancelRequests: once the startup finished,
// a cancel request is dialed as pgx means it.
func TestPgxStartedConnectionSendsCancelRequests(t *testing.T) {
	s := pgxdialtest.NewStarted(t)
	ctx, _ := withDialLog(context.Background())
	c, err := pgxConnector(s.Config, pgxPieces{cancelWait: defaultCancelWait, endWait: -1}, nil).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.ExpectCancelRequest(t, c.(*stdlib.Conn).Conn().PgConn())
}
