package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

const (
	startTimeout = 3 * time.Minute // generous: Docker may pull images
	stopTimeout  = 30 * time.Second
)

// TestingM is the part of *testing.M that TestMain and
// goleak.VerifyTestMain use.
type TestingM interface {
	Run() int
}

type runFunc func() int

func (f runFunc) Run() int { return f() }

// WithServers returns a TestingM whose Run starts PostgreSQL and MariaDB,
// passes them to setup, runs m, and stops both servers before returning.
// A start failure is printed and fails the run without running any test.
// Servers are stopped before Run returns, so a goleak.VerifyTestMain
// wrapping it sees none of their goroutines.
func WithServers(m TestingM, setup func(pg, maria *Server)) TestingM {
	return runFunc(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		pg, maria, err := StartBoth(ctx)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		setup(pg, maria)
		code := m.Run()
		ctx, cancel = context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := errors.Join(pg.Stop(ctx), maria.Stop(ctx)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		return code
	})
}

// StartBoth starts PostgreSQL and MariaDB concurrently, both with opts. On
// error neither server is left running.
func StartBoth(ctx context.Context, opts ...Option) (pg, maria *Server, err error) {
	if _, err := newOptions(opts).backendDocker(); err != nil {
		return nil, nil, err // report a backend error once, not per server
	}
	var wg sync.WaitGroup
	var pgErr, mariaErr error
	wg.Go(func() { pg, pgErr = StartPostgres(ctx, opts...) })
	wg.Go(func() { maria, mariaErr = StartMariaDB(ctx, opts...) })
	wg.Wait()
	if err := errors.Join(pgErr, mariaErr); err != nil {
		for _, s := range []*Server{pg, maria} {
			if s != nil {
				_ = s.Stop(context.Background())
			}
		}
		return nil, nil, err
	}
	return pg, maria, nil
}
