package respoolotel_test

import (
	"context"
	"fmt"
	"sort"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respool/respool/health"
	respoolotel "github.com/respool/respool/otel"
	"github.com/respool/respool/pool"
)

// A pool instrumented with an SDK MeterProvider (in a program: the one its
// exporter reads, or nil in Config for the global one). For database/sql,
// give health.FromConnector(connector, db.PingContext) instead.
func ExampleInstrument() {
	p, err := pool.New(pool.Factory[int]{Create: func(context.Context) (int, error) { return 1, nil }},
		pool.Config{Name: "orders", MaxObjects: 4})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	stop, err := respoolotel.Instrument("orders", health.FromPool(p), respoolotel.Config{MeterProvider: mp})
	if err != nil {
		panic(err)
	}
	defer stop()
	h, _ := p.Take(context.Background())
	_ = h.GiveBack()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var names []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if len(m.Name) > 10 && m.Name[:10] == "db.client." {
			names = append(names, m.Name+" "+m.Unit)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// db.client.connection.count {connection}
	// db.client.connection.create_time s
	// db.client.connection.idle.max {connection}
	// db.client.connection.idle.min {connection}
	// db.client.connection.max {connection}
	// db.client.connection.pending_requests {request}
	// db.client.connection.timeouts {timeout}
	// db.client.connection.use_time s
	// db.client.connection.wait_time s
}
