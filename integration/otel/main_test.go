package otel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

const (
	startBound = 90 * time.Second
	stopBound  = 30 * time.Second
)

// pg and maria are the suite's servers.
var pg, maria *servers.Server

type runFunc func() int

func (f runFunc) Run() int { return f() }

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(runFunc(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), startBound)
		var err error
		pg, err = servers.StartPostgres(ctx)
		if err == nil {
			maria, err = servers.StartMariaDB(ctx)
		}
		cancel()
		code := 1
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		} else {
			code = m.Run()
		}
		ctx, cancel = context.WithTimeout(context.Background(), stopBound)
		defer cancel()
		for _, s := range []*servers.Server{pg, maria} {
			if s == nil {
				continue
			}
			if err := s.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(os.Stderr, err)
				code = 1
			}
		}
		return code
	}))
}
