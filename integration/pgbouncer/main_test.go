package pgbouncer

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

// poolSize is PgBouncer's default_pool_size: the server connections it
// opens for the test database, fewer than each client's goroutines.
const poolSize = 4

// The suite's servers: PostgreSQL, and PgBouncer in front of it in
// transaction mode.
var (
	pg      *servers.Server
	bouncer *servers.PgBouncer
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (started []servers.Stopper, err error) {
		if pg, err = servers.StartPostgres(ctx); err != nil {
			return nil, err
		}
		started = append(started, pg)
		if bouncer, err = servers.StartPgBouncer(ctx, pg, servers.PgBouncerConfig{PoolMode: "transaction", PoolSize: poolSize}); err != nil {
			return started, err
		}
		return []servers.Stopper{bouncer, pg}, nil // PgBouncer first: it holds connections to pg
	}))
}
