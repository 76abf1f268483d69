package sharedrate

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

// pg and rds are the suite's servers.
var (
	pg  *servers.Server
	rds *servers.Redis
)

func TestMain(m *testing.M) {
	if isChild() { // a process of TestEightProcessesShareAConnectRate: no servers of its own
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (started []servers.Stopper, err error) {
		if pg, err = servers.StartPostgres(ctx); err != nil {
			return nil, err
		}
		started = append(started, pg)
		if rds, err = servers.StartRedis(ctx); err != nil {
			return started, err
		}
		return append(started, rds), nil
	}))
}
