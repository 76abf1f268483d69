package multiproc

import (
	"context"
	"errors"
	"io"
	"log"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

// The suite's servers: PostgreSQL and MariaDB whose max_connections leave
// no room beyond the budget and the parent's sessions (so that a process
// that dialed past the budget would be refused, and the refusal counted),
// and Redis for the budget.
var (
	pg, maria *servers.Server
	rds       *servers.Redis
)

// serverMaxConnections: the budget, the sampler's session and one spare
// (PgBouncer's or a setup's).
const serverMaxConnections = budgetMax + 2

// MariaDB users of the workers: worker i logs in as mariaUser(i), so that
// the process list counts each process's sessions.
const (
	mariaUserPrefix = "multiproc"
	mariaPassword   = "multiproc-secret"
)

func mariaUser(i int) string { return mariaUserPrefix + strconv.Itoa(i) }

func TestMain(m *testing.M) {
	// go-sql-driver/mysql logs every broken connection on its own logger.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	if os.Getenv(workerEnv) != "" { // a worker process: no servers of its own
		goleak.VerifyTestMain(m)
		return
	}
	goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (started []servers.Stopper, err error) {
		var wg sync.WaitGroup
		var pgErr, mariaErr error
		wg.Go(func() {
			pg, pgErr = servers.StartPostgres(ctx, servers.MaxConnections(serverMaxConnections), servers.LogConnections())
		})
		wg.Go(func() {
			if maria, mariaErr = servers.StartMariaDB(ctx, servers.MaxConnections(serverMaxConnections)); mariaErr != nil {
				return
			}
			for i := range processes {
				if mariaErr = maria.CreateUser(ctx, mariaUser(i), mariaPassword); mariaErr != nil {
					return
				}
			}
		})
		wg.Wait()
		for _, s := range []*servers.Server{pg, maria} {
			if s != nil {
				started = append(started, s)
			}
		}
		if err := errors.Join(pgErr, mariaErr); err != nil {
			return started, err
		}
		if rds, err = servers.StartRedis(ctx); err != nil {
			return started, err
		}
		return append(started, rds), nil
	}))
}

var budgets atomic.Int64

// budgetName is a name no other budget of the suite's Redis has.
func budgetName(t *testing.T) string { return t.Name() + "-" + strconv.FormatInt(budgets.Add(1), 10) }
