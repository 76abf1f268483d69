// Command observability serves the health, the Prometheus metrics and the
// OpenTelemetry metrics of a respool database/sql pool (an embedded SQLite
// database, modernc.org/sqlite) while a small workload runs on it:
//
//   - /livez: 200 while the process answers;
//   - /readyz: 200 when a query can be served now (the pool is open, its
//     circuit breaker is not open, its pause does not hold, and a ping
//     succeeds within the probe's bound), else 503, with the reasons as JSON;
//   - /health: the full report as JSON (connections, waits, acquire-wait
//     quantiles, destroys by reason, the breaker);
//   - /metrics: the pool as respool_* metrics with the label pool="orders",
//     for a Prometheus scrape (package metrics/prometheus);
//   - /otel: the pool's OpenTelemetry metrics (module otel: the semantic
//     conventions' db.client.connection.* and respool.*), collected by an
//     in-process reader and shown as JSON; a service gives its exporter's
//     MeterProvider instead (OTLP, or OpenTelemetry's Prometheus exporter).
//
// health.FromConnector makes the pool's health source from its Connector:
// the pool, the breaker and pause in front of it, and db.PingContext as the
// readiness probe.
//
//	go run ./observability -addr 127.0.0.1:9090
//	curl http://127.0.0.1:9090/metrics
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
	respoolprom "github.com/respool/respool/metrics/prometheus"
	respoolotel "github.com/respool/respool/otel"
	_ "modernc.org/sqlite" // registers "sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "the address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		err = run(ctx, ln, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "observability:", err)
		os.Exit(1)
	}
}

const (
	poolName        = "orders"
	workInterval    = 100 * time.Millisecond // between the workload's rounds
	shutdownTimeout = 5 * time.Second
)

// run serves on ln, with the workload running, until ctx ends.
func run(ctx context.Context, ln net.Listener, out io.Writer) error {
	dir, err := os.MkdirTemp("", "respool-observability-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o, err := newObserved(ctx, dir)
	if err != nil {
		return err
	}
	defer o.Close()

	wctx, stopWork := context.WithCancel(ctx)
	worked := make(chan struct{})
	go func() {
		defer close(worked)
		o.workload(wctx)
	}()
	defer func() { stopWork(); <-worked }()

	srv := &http.Server{Handler: o, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "serving http://%[1]s/readyz, http://%[1]s/health and http://%[1]s/metrics (Ctrl-C to stop)\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// observed is a database pool with its health checker and metrics
// registry, and the HTTP handler serving them.
type observed struct {
	db        *sql.DB
	connector *respool.Connector
	checker   *health.Checker
	otel      *sdkmetric.ManualReader
	meters    *sdkmetric.MeterProvider
	stopOtel  func() error
	http.Handler
}

func newObserved(ctx context.Context, dir string) (*observed, error) {
	dsn := "file:" + filepath.ToSlash(filepath.Join(dir, "orders.db")) +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)" +
		"&respool_driver=sqlite&respool_name=" + poolName + "&respool_max_conns=4&respool_close_timeout=5s"
	db, connector, err := respool.OpenDB(dsn) // sql.Open("respool", dsn), and its Connector
	if err != nil {
		return nil, err
	}
	o := &observed{db: db, connector: connector}
	if err := o.setUp(ctx); err != nil {
		db.Close()
		return nil, err
	}

	// Health: the pool, its breaker and pause, probed by a ping.
	if o.checker, err = health.New(health.Config{ProbeTimeout: time.Second}); err != nil {
		db.Close()
		return nil, err
	}
	if err := o.checker.Add(poolName, health.FromConnector(connector, db.PingContext)); err != nil {
		db.Close()
		return nil, err
	}
	// Metrics: the checker's pools, read at every scrape. A service would
	// register the collector with prometheus.DefaultRegisterer, beside its
	// own metrics, and serve promhttp.Handler().
	reg := prom.NewRegistry()
	if err := reg.Register(respoolprom.NewCollector(o.checker)); err != nil {
		db.Close()
		return nil, err
	}

	// OpenTelemetry: the same source, recorded with a MeterProvider (here
	// one with an in-process reader; a service passes its exporter's, or
	// none for the global one).
	o.otel = sdkmetric.NewManualReader()
	o.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.otel))
	if o.stopOtel, err = respoolotel.Instrument(poolName, health.FromConnector(connector, db.PingContext),
		respoolotel.Config{MeterProvider: o.meters}); err != nil {
		o.Close()
		return nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("/", o.checker.Handler()) // /livez, /readyz, /health
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /otel", o.serveOtel)
	o.Handler = mux
	return o, nil
}

// serveOtel collects the OpenTelemetry metrics and writes them as JSON.
func (o *observed) serveOtel(w http.ResponseWriter, r *http.Request) {
	var rm metricdata.ResourceMetrics
	if err := o.otel.Collect(r.Context(), &rm); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rm.ScopeMetrics)
}

func (o *observed) setUp(ctx context.Context) error {
	_, err := o.db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL, qty INTEGER NOT NULL)`)
	return err
}

// work runs one round of the workload: a few concurrent inserts and reads.
func (o *observed) work(ctx context.Context) error {
	errs := make(chan error, 8)
	for i := range cap(errs) {
		go func() {
			if i%2 == 0 {
				_, err := o.db.ExecContext(ctx, "INSERT INTO orders (item, qty) VALUES (?, ?)", "espresso", i)
				errs <- err
				return
			}
			var n int
			errs <- o.db.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&n)
		}()
	}
	var err error
	for range cap(errs) {
		err = errors.Join(err, <-errs)
	}
	return err
}

// workload runs a round every workInterval until ctx ends.
func (o *observed) workload(ctx context.Context) {
	t := time.NewTicker(workInterval)
	defer t.Stop()
	for {
		if err := o.work(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "workload:", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the OpenTelemetry instruments and closes the database: its
// pool's connections are closed.
func (o *observed) Close() error {
	var err error
	if o.stopOtel != nil {
		err = errors.Join(o.stopOtel(), o.meters.Shutdown(context.Background()))
	}
	return errors.Join(err, o.db.Close())
}
