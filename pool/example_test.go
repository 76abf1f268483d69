package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/respool/respool/pool"
)

type conn struct{ id int }

func Example() {
	next := 0
	f := pool.Factory[*conn]{
		Create: func(ctx context.Context) (*conn, error) {
			next++ // the actor runs one creation at a time here (MaxConcurrentCreates 1)
			return &conn{id: next}, nil
		},
		Destroy: func(c *conn) error { return nil },
	}
	p, err := pool.New[*conn](f, pool.Config{MaxObjects: 2, MaxConcurrentCreates: 1})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	h, err := p.Take(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("took conn", h.Value().id)
	if err := h.GiveBack(); err != nil {
		panic(err)
	}
	fmt.Println("giving back twice:", h.GiveBack())
	// Output:
	// took conn 1
	// giving back twice: pool: handle already given back
}

func ExamplePool_Take_queueFull() {
	f := pool.Factory[*conn]{Create: func(context.Context) (*conn, error) { return &conn{}, nil }}
	p, _ := pool.New[*conn](f, pool.Config{MaxObjects: 1, MaxQueueSize: 1})
	defer p.Close(context.Background())

	held, _ := p.Take(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error)
	go func() { _, err := p.Take(ctx); waiting <- err }()
	for p.Stats().Queued == 0 { // let the second caller queue
	}

	_, err := p.Take(context.Background())
	fmt.Println(errors.Is(err, pool.ErrQueueFull))
	fmt.Println(err)
	cancel()
	fmt.Println(<-waiting)
	_ = held.GiveBack()
	// Output:
	// true
	// pool: wait queue full: 1 caller already waiting (MaxQueueSize 1, MaxObjects 1)
	// context canceled
}

// While creations fail, a caller that cannot wait for the pool's next
// attempt fails at once, with the last failure and the time of that attempt.
func ExamplePool_Take_creationsFailing() {
	refused := errors.New("connection refused")
	f := pool.Factory[*conn]{Create: func(context.Context) (*conn, error) { return nil, refused }}
	p, _ := pool.New[*conn](f, pool.Config{
		MaxObjects:     4,
		BackoffInitial: time.Second, // the next attempt 0.5-1s after a failure
		Logger:         slog.New(slog.DiscardHandler),
	})
	defer p.Close(context.Background())
	take := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := p.Take(ctx)
		return err
	}

	fmt.Println(take()) // the creation made for it fails
	err := take()       // no attempt before its deadline: it fails at once
	var ce *pool.CreateError
	fmt.Println(errors.Is(err, refused), errors.As(err, &ce) && ce.FailedFast)
	fmt.Println(ce.RetryAfter().Equal(p.Stats().NextCreateAttempt))
	// Output:
	// pool: create: connection refused
	// true true
	// true
}
