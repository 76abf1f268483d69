package bulkhead_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/bulkhead"
)

func Example() {
	b, err := bulkhead.New(bulkhead.Config{Name: "reports", MaxConcurrent: 1})
	if err != nil {
		panic(err)
	}
	held, _ := b.Enter(context.Background()) // a long report holds the only slot
	_, err = resilience.Do(context.Background(), b, func(context.Context) (string, error) { return "another", nil })
	fmt.Println(errors.Is(err, bulkhead.ErrFull))
	b.Exit(held, nil)
	v, err := resilience.Do(context.Background(), b, func(context.Context) (string, error) { return "another", nil })
	fmt.Println(v, err)
	// Output:
	// true
	// another <nil>
}
