// Command quickstart runs a respool pool on an in-memory factory: it takes
// and gives back objects from many goroutines, overloads the queue, loses a
// handle on purpose so that the leak detector reports it, and prints the
// pool's stats. It needs no database.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/pool"
)

type conn struct{ id int64 }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	var ids atomic.Int64
	leaked := make(chan struct{}, 1)
	f := pool.Factory[*conn]{
		Create: func(ctx context.Context) (*conn, error) {
			time.Sleep(2 * time.Millisecond) // a connection handshake
			return &conn{id: ids.Add(1)}, nil
		},
	}
	p, err := pool.New[*conn](f, pool.Config{
		MaxObjects:       4,
		MaxQueueSize:     8,
		LeakCaptureStack: true,
		Logger:           slog.New(slog.NewTextHandler(os.Stdout, nil)),
		Name:             "quickstart",
		OnEvent: func(e pool.Event) {
			if e.Kind == pool.EventLeak {
				select {
				case leaked <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		return err
	}

	// 32 goroutines share 4 objects; at most 8 may wait, the rest fail fast.
	var wg sync.WaitGroup
	var served, refused atomic.Int64
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			h, err := p.Take(ctx)
			if errors.Is(err, pool.ErrQueueFull) {
				refused.Add(1)
				return
			}
			if err != nil {
				fmt.Println("take:", err)
				return
			}
			time.Sleep(time.Millisecond) // a query
			served.Add(1)
			_ = h.GiveBack()
		}()
	}
	wg.Wait()
	fmt.Printf("served %d callers, refused %d at once (queue full)\n", served.Load(), refused.Load())

	loseAHandle(p)
	// The leak is found when the lost handle is collected: run the
	// collector until the pool reports it.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	bound := time.After(time.Second)
	for reported := false; !reported; {
		runtime.GC()
		select {
		case <-leaked:
			reported = true
		case <-tick.C:
		case <-bound:
			return errors.New("the lost handle was not reported within 1s")
		}
	}

	s := p.Stats()
	p99, _ := s.WaitHistogram.Quantile(0.99)
	fmt.Printf("stats: total=%d idle=%d in_use=%d takes=%d waits=%d queue_full=%d creates=%d leaks=%d p99_wait<=%v\n",
		s.Total, s.Idle, s.InUse, s.Takes, s.Waits, s.QueueFull, s.Creates, s.LeaksDetected, p99)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Close(ctx)
}

// loseAHandle takes an object and forgets to give it back.
func loseAHandle(p *pool.Pool[*conn]) {
	h, err := p.Take(context.Background())
	if err != nil {
		fmt.Println("take:", err)
		return
	}
	fmt.Printf("took conn %d and lost its handle\n", h.Value().id)
}
