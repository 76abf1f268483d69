package otel

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
	"github.com/respool/respool/integration/servers"
	respoolotel "github.com/respool/respool/otel"
	"github.com/respool/respool/pool"
)

// metrics is one collection, by instrument name.
type metrics map[string]metricdata.Metrics

func collect(t *testing.T, r *sdkmetric.ManualReader) metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m := metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, x := range sm.Metrics {
			m[x.Name] = x
		}
	}
	return m
}

// sum returns the value of the sum name's point with attrs beside the
// pool's name.
func (m metrics) sum(t *testing.T, name, poolName string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(append([]attribute.KeyValue{attribute.String("db.client.connection.pool.name", poolName)}, attrs...)...)
	d, ok := m[name].Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: data %T; want an int64 sum", name, m[name].Data)
	}
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&want) {
			return p.Value
		}
	}
	t.Fatalf("%s: no point with %v", name, want.ToSlice())
	return 0
}

func (m metrics) hist(t *testing.T, name string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	d, ok := m[name].Data.(metricdata.Histogram[float64])
	if !ok || len(d.DataPoints) != 1 {
		t.Fatalf("%s: data %T (%+v); want a float64 histogram of one point", name, m[name].Data, m[name].Data)
	}
	return d.DataPoints[0]
}

// On a real server, through database/sql: the counts follow idle and used
// connections, a caller waiting for one is a pending request, an acquire
// timeout is counted, and each connection's opening, each take's wait and
// each hold land in the histograms (an opening on loopback: under 1 s,
// within the wait of the take it was made for; holds of at least
// holdFor).
func TestInstrumentsFollowThePool(t *testing.T) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) {
			const holdFor = 20 * time.Millisecond
			// 1s: the bound of the fourth caller's wait, and of each of the
			// first three's dial (a SCRAM login under -race on a busy machine
			// takes a good part of 100ms).
			db, c, err := respool.OpenDB(s.DSN() + "&respool_name=orders&respool_max_conns=3&respool_acquire_timeout=1s")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())
			stop, err := respoolotel.Instrument("orders", health.FromConnector(c, db.PingContext), respoolotel.Config{MeterProvider: mp})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var conns []*sql.Conn
			for range 3 {
				cn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := cn.PingContext(ctx); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, cn)
			}
			fourth := make(chan error, 1)
			go func() {
				cn, err := db.Conn(ctx)
				if err == nil {
					err = cn.PingContext(ctx)
					cn.Close()
				}
				fourth <- err
			}()
			servers.WaitFor(t, ctx, "the fourth caller to wait", func() (bool, error) { return c.Stats().Waiting == 1, nil })
			m := collect(t, reader)
			idle := attribute.String("db.client.connection.state", "idle")
			used := attribute.String("db.client.connection.state", "used")
			for _, w := range []struct {
				name  string
				attrs []attribute.KeyValue
				want  int64
			}{
				{"db.client.connection.count", []attribute.KeyValue{used}, 3},
				{"db.client.connection.count", []attribute.KeyValue{idle}, 0},
				{"db.client.connection.pending_requests", nil, 1},
				{"db.client.connection.max", nil, 3},
				{"db.client.connection.timeouts", nil, 0},
			} {
				if got := m.sum(t, w.name, "orders", w.attrs...); got != w.want {
					t.Errorf("three in use, one waiting: %s %v = %d; want %d", w.name, w.attrs, got, w.want)
				}
			}
			if err := <-fourth; !errors.Is(err, pool.ErrAcquireTimeout) {
				t.Fatalf("the fourth caller got %v; want an acquire timeout", err)
			}
			time.Sleep(holdFor) // the holds: a duration measured, not a wait for something to happen
			for _, cn := range conns {
				if err := cn.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for range 5 { // idle connections: taken at once
				if err := db.PingContext(ctx); err != nil {
					t.Fatal(err)
				}
			}

			m = collect(t, reader)
			for _, w := range []struct {
				name  string
				attrs []attribute.KeyValue
				want  int64
			}{
				{"db.client.connection.count", []attribute.KeyValue{used}, 0},
				{"db.client.connection.count", []attribute.KeyValue{idle}, 3},
				{"db.client.connection.pending_requests", nil, 0},
				{"db.client.connection.timeouts", nil, 1},
			} {
				if got := m.sum(t, w.name, "orders", w.attrs...); got != w.want {
					t.Errorf("after the holds: %s %v = %d; want %d", w.name, w.attrs, got, w.want)
				}
			}
			// Bounds 0.001 0.005 0.01 0.05 0.1 0.5 1 5 10 s: bucket 0 is ≤ 1 ms.
			create := m.hist(t, "db.client.connection.create_time")
			if mn, _ := create.Min.Value(); create.Count != 3 || mn <= 0 {
				t.Errorf("create_time: %d openings, min %v s; want 3, each a measured time", create.Count, create.Min)
			}
			if mx, _ := create.Max.Value(); mx >= 1 {
				t.Errorf("create_time: max %v s; want an opening on loopback under 1 s", mx)
			}
			wait := m.hist(t, "db.client.connection.wait_time")
			// The first three waited for their own openings; the pings took
			// idle connections (or one being given back: a pgx connection's
			// session reset is a round trip).
			if wait.Count != 8 || wait.Sum < create.Sum {
				t.Errorf("wait_time: %d takes (buckets %v), sum %v s; want 8, a sum of at least the openings' %v s",
					wait.Count, wait.BucketCounts, wait.Sum, create.Sum)
			}
			use := m.hist(t, "db.client.connection.use_time")
			if use.Count != 8 || use.Sum < 3*holdFor.Seconds() {
				t.Errorf("use_time: %d holds, sum %v s; want 8, at least %v s", use.Count, use.Sum, 3*holdFor.Seconds())
			}
			if s := c.DBStats(); s.OpenConnections != 3 || s.Idle != 3 || s.MaxOpenConnections != 3 {
				t.Errorf("DBStats = %+v; want 3 open, 3 idle, max 3", s)
			}
		})
	}
}
