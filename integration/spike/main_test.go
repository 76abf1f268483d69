package spike

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

var pg *servers.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (_ []servers.Stopper, err error) {
		if pg, err = servers.StartPostgres(ctx); err != nil {
			return nil, err
		}
		return []servers.Stopper{pg}, nil
	}))
}
