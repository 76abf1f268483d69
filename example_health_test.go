package respool_test

import (
	"net/http"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
)

// The health of a Connector, served for a load balancer (package health):
// its pool, its circuit breaker and pause (Connector.Breaker and Pause), and
// a ping, a round trip to the server, as the readiness probe.
func ExampleConnector_health() {
	db, connector, err := respool.OpenDB("postgres://app:secret@db.internal/orders?respool_name=orders")
	if err != nil {
		panic(err)
	}
	defer db.Close()

	checker, err := health.New(health.Config{})
	if err != nil {
		panic(err)
	}
	if err := checker.Add(connector.Name(), health.FromConnector(connector, db.PingContext)); err != nil {
		panic(err)
	}
	http.Handle("/", checker.Handler()) // /livez, /readyz, /health
}
