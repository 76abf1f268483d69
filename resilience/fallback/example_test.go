package fallback_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/respool/respool/resilience/fallback"
)

func Example() {
	f, _ := fallback.New(fallback.Config[[]string]{Value: []string{"(cached list)"}})
	v, err := f.Do(context.Background(), func(context.Context) ([]string, error) {
		return nil, errors.New("replica down")
	})
	fmt.Println(v, err)
	// Output: [(cached list)] <nil>
}
