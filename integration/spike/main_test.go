package spike

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

var pg *servers.Server

type runFunc func() int

func (f runFunc) Run() int { return f() }

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(runFunc(func() int {
		ctx, cancel := context.WithTimeout(context.Background(), startBound)
		var err error
		pg, err = servers.StartPostgres(ctx)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := m.Run()
		ctx, cancel = context.WithTimeout(context.Background(), stopBound)
		defer cancel()
		if err := pg.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		return code
	}))
}
