package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

const (
	// suiteBound is how long the suite may take from its start to the end
	// of its last scenario, servers' start included: every call and every
	// wait ends by then. Stopping the servers takes at most stopBound more.
	suiteBound = 6 * time.Minute  // under -race on 2 cores the suite takes about 3½
	startBound = 90 * time.Second // to start the four servers
	stopBound  = 30 * time.Second // to stop them
)

// serverSet is one kind of server as the suite uses it: a server for the
// faults, and one whose session limit is below the pools' size.
type serverSet struct {
	kind    string
	main    *servers.Server // max_connections 200
	limited *servers.Server // max_connections limitSessions
}

var (
	sets []*serverSet // PostgreSQL, then MariaDB
	// suiteCtx ends suiteBound after the suite began.
	suiteCtx   context.Context
	suiteBegan time.Time
)

func TestMain(m *testing.M) {
	// go-sql-driver/mysql logs every broken connection on its own logger:
	// thousands of lines while a server is down.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	var cancel context.CancelFunc
	suiteBegan = time.Now()
	suiteCtx, cancel = context.WithTimeout(context.Background(), suiteBound)
	defer cancel()
	goleak.VerifyTestMain(runFunc(func() int {
		if err := startServers(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := m.Run()
		if err := stopServers(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
		return code
	}))
}

type runFunc func() int

func (f runFunc) Run() int { return f() }

// startServers starts the suite's four servers at once; on error none is
// left running.
func startServers() error {
	ctx, cancel := context.WithTimeout(suiteCtx, startBound)
	defer cancel()
	pg := &serverSet{kind: servers.KindPostgres}
	maria := &serverSet{kind: servers.KindMariaDB}
	sets = []*serverSet{pg, maria}
	// LogConnections changes PostgreSQL only.
	opts := []servers.Option{servers.Local(), servers.LogConnections()}
	limited := slices.Concat(opts, []servers.Option{servers.MaxConnections(limitSessions)})
	var mainErr, limitedErr error
	var wg sync.WaitGroup
	wg.Go(func() { pg.main, maria.main, mainErr = servers.StartBoth(ctx, opts...) })
	wg.Go(func() { pg.limited, maria.limited, limitedErr = servers.StartBoth(ctx, limited...) })
	wg.Wait()
	if err := errors.Join(mainErr, limitedErr); err != nil {
		_ = stopServers()
		return err
	}
	return nil
}

func stopServers() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	var errs []error
	for _, set := range sets {
		for _, s := range []*servers.Server{set.main, set.limited} {
			if s != nil {
				errs = append(errs, s.Stop(ctx))
			}
		}
	}
	return errors.Join(errs...)
}
