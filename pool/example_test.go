package pool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/respool/respool/factory"
	"github.com/respool/respool/pool"
)

type conn struct{ id int }

func Example() {
	next := 0
	f := factory.Funcs[*conn]{
		CreateFunc: func(ctx context.Context) (*conn, error) {
			next++ // the actor runs one creation at a time here (MaxConcurrentCreates 1)
			return &conn{id: next}, nil
		},
		DestroyFunc: func(c *conn) error { return nil },
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
	if err := p.GiveBack(h); err != nil {
		panic(err)
	}
	fmt.Println("giving back twice:", p.GiveBack(h))
	// Output:
	// took conn 1
	// giving back twice: pool: handle already given back
}

func ExamplePool_Take_queueFull() {
	f := factory.Funcs[*conn]{CreateFunc: func(context.Context) (*conn, error) { return &conn{}, nil }}
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
	_ = p.GiveBack(held)
	// Output:
	// true
	// pool: wait queue full: 1 caller already waiting (MaxQueueSize 1, MaxObjects 1)
	// context canceled
}
