package leak_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/leak"
	"github.com/respool/respool/pool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A pool that records who took each object and reports handles held longer
// than a minute. Search the logs for leak.MsgLeak and leak.MsgHeld.
func ExampleConfig() {
	f := pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }}
	p, err := pool.New[int](f, pool.Config{
		Leak: leak.Config{CaptureStack: true, HoldThreshold: time.Minute},
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	fmt.Println(leak.MsgLeak, leak.MsgHeld)
	// Output: LEAK-DETECTED HELD-TOO-LONG
}
