package prometheus_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/respool/respool/health"
	respoolprom "github.com/respool/respool/metrics/prometheus"
	"github.com/respool/respool/pool"
)

// Export the metrics of a Checker's pools for scraping. For a database/sql
// pool of package respool, add health.FromConnector(connector, db.PingContext):
// its breaker and pause are exported too.
func ExampleCollector() {
	p, err := pool.New[int](pool.Factory[int]{
		Create: func(context.Context) (int, error) { return 1, nil },
	}, pool.Config{MaxObjects: 4, LeakTrackingDisabled: true})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	checker, err := health.New(health.Config{}) // also serves /readyz: see package health
	if err != nil {
		panic(err)
	}
	if err := checker.Add("orders", health.FromPool(p)); err != nil {
		panic(err)
	}
	reg := prom.NewRegistry() // or prometheus.DefaultRegisterer
	reg.MustRegister(respoolprom.NewCollector(checker))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})) // serve it at /metrics
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "respool_max_objects") || strings.HasPrefix(l, "# TYPE respool_takes_total") {
			fmt.Println(l)
		}
	}
	// Output:
	// respool_max_objects{pool="orders"} 4
	// # TYPE respool_takes_total counter
}
