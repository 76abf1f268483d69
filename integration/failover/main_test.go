package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

const (
	// suiteBound is how long the suite may take from its start to the end
	// of its last scenario, servers' start included: every write and every
	// wait ends by then. Stopping the servers takes at most stopBound more.
	suiteBound = 80 * time.Second
	startBound = 60 * time.Second // to start the servers and the standby
	stopBound  = 20 * time.Second
)

// The suite's servers, started by each run of TestFailover (a run stops
// the primary for good, so that a second run, go test -count=2, needs its
// own): two independent PostgreSQL primaries, a streaming standby of the
// first, and MariaDB.
var (
	primary  *servers.Server // demoted in place, then stopped (-m immediate)
	writable *servers.Server // the writable server listed beside the demoted one; the rotation's PostgreSQL
	standby  *servers.Server // of primary; promoted
	maria    *servers.Server // read_only; the rotation's MariaDB

	suiteCtx   context.Context // ends suiteBound after the run began
	suiteBegan time.Time
)

func TestMain(m *testing.M) {
	// go-sql-driver/mysql logs every broken connection on its own logger.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	goleak.VerifyTestMain(m)
}

// beginSuite starts a run of the suite: its bound and its servers, stopped
// when t ends.
func beginSuite(t *testing.T) {
	suiteBegan = time.Now()
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithTimeout(context.Background(), suiteBound)
	t.Cleanup(cancel)
	if err := startServers(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stopServers(); err != nil {
			t.Error(err)
		}
	})
}

// startServers starts the suite's servers at once (the standby once its
// primary runs); on error none is left running.
func startServers() error {
	ctx, cancel := context.WithTimeout(suiteCtx, startBound)
	defer cancel()
	var pErr, wErr, mErr, sErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if primary, pErr = servers.StartPostgres(ctx, servers.Local()); pErr == nil {
			standby, sErr = primary.StartStandby(ctx)
		}
	})
	wg.Go(func() { writable, wErr = servers.StartPostgres(ctx, servers.Local()) })
	wg.Go(func() { maria, mErr = servers.StartMariaDB(ctx, servers.Local()) })
	wg.Wait()
	if err := errors.Join(pErr, wErr, mErr, sErr); err != nil {
		_ = stopServers()
		return err
	}
	fmt.Fprintf(os.Stderr, "failover: servers started in %v\n", time.Since(suiteBegan).Round(time.Millisecond))
	return nil
}

func stopServers() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	var errs []error
	for _, s := range []*servers.Server{standby, primary, writable, maria} {
		if s != nil {
			errs = append(errs, s.Stop(ctx))
		}
	}
	return errors.Join(errs...)
}
