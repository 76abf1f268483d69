package otel

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

// pg and maria are the suite's servers.
var pg, maria *servers.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (started []servers.Stopper, err error) {
		if pg, err = servers.StartPostgres(ctx); err != nil {
			return nil, err
		}
		started = append(started, pg)
		if maria, err = servers.StartMariaDB(ctx); err != nil {
			return started, err
		}
		return append(started, maria), nil
	}))
}
