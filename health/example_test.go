package health_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"time"

	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
)

// A Checker over one pool, served for a load balancer. For a database/sql
// pool of package respool, see FromConnector.
func Example() {
	p, err := pool.New[int](pool.Factory[int]{
		Create: func(context.Context) (int, error) { return 1, nil },
	}, pool.Config{MaxObjects: 4, Name: "orders"})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	checker, err := health.New(health.Config{ProbeTimeout: 500 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := checker.Add("orders", health.FromPool(p)); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(checker.Handler()) // or http.Handle("/", ...)
	defer srv.Close()

	for _, path := range []string{"/livez", "/readyz"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode)
	}
	r := checker.Report().Pools[0]
	fmt.Printf("%s: %d of %d objects, %d idle, %d takes\n", r.Name, r.Total, r.MaxObjects, r.Idle, r.Takes)
	// Output:
	// /livez 200
	// /readyz 200
	// orders: 1 of 4 objects, 1 idle, 1 takes
}
