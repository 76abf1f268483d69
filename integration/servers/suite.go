package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// Bounds of a Suite's start and stop.
const (
	suiteStartBound = 90 * time.Second
	suiteStopBound  = 30 * time.Second
)

// Stopper is a server a Suite stops when its tests end: a *Server or a
// *Redis.
type Stopper interface{ Stop(context.Context) error }

// Suite is the body of a TestMain whose tests share servers: start starts
// them (within 90 s) and returns those to stop (those it started before
// failing, too); the tests run if it succeeded; the servers are stopped
// (within 30 s) whatever happened. Its Run is goleak's TestingM:
//
//	var pg *servers.Server
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (_ []servers.Stopper, err error) {
//			if pg, err = servers.StartPostgres(ctx); err != nil {
//				return nil, err
//			}
//			return []servers.Stopper{pg}, nil
//		}))
//	}
func Suite(m *testing.M, start func(ctx context.Context) ([]Stopper, error)) interface{ Run() int } {
	return suite{m, start}
}

type suite struct {
	m     *testing.M
	start func(ctx context.Context) ([]Stopper, error)
}

func (s suite) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), suiteStartBound)
	started, err := s.start(ctx)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = s.m.Run()
	}
	ctx, cancel = context.WithTimeout(context.Background(), suiteStopBound)
	defer cancel()
	for _, srv := range started {
		if err := srv.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}
