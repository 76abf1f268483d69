// Command httpservice is an HTTP service on a respool database/sql pool
// (an embedded SQLite database, modernc.org/sqlite) that answers overload
// the way clients and load balancers act on, instead of with a 500:
//
//   - 503 Service Unavailable with Retry-After when the pool cannot serve
//     the request: its wait queue is full (respool_max_queue), or its
//     circuit breaker is open (the answer waits out the breaker's time);
//   - 429 Too Many Requests with Retry-After when the service's rate limiter
//     (resilience/ratelimit) refuses the request.
//
// package httpguard makes the answers: Server.Admit puts the limiter in
// front of the handler, and Server.Handler turns the errors the handler
// returns into 503 or 429.
//
//	go run ./httpservice -addr 127.0.0.1:8080
//	curl -i http://127.0.0.1:8080/orders/1
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
	"strconv"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/httpguard"
	"github.com/respool/respool/resilience/ratelimit"
	_ "modernc.org/sqlite" // registers "sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		err = run(ctx, ln, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpservice:", err)
		os.Exit(1)
	}
}

// run serves on ln until ctx ends, then shuts the server down (within
// shutdownTimeout) and closes the database.
func run(ctx context.Context, ln net.Listener, out io.Writer) error {
	dir, err := os.MkdirTemp("", "respool-httpservice-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc, err := newService(ctx, options{dir: dir})
	if err != nil {
		return err
	}
	defer svc.Close()

	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "serving on http://%s/orders/1 (Ctrl-C to stop)\n", ln.Addr())
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

const shutdownTimeout = 5 * time.Second

// options configure a service; their zero values are the defaults written
// beside them.
type options struct {
	dir string // where the database file lives (required)
	// maxConns and maxQueue size the pool: connections, and requests that
	// may wait for one. Defaults 4 and 16.
	maxConns, maxQueue int
	// limit is the rate limiter's. Default 100 requests a second, bursts of
	// 100.
	limit ratelimit.Limit
	// openDelay is how long the circuit stays open. Default 30s.
	openDelay time.Duration
}

// service answers GET /orders/{id} from the orders table.
type service struct {
	db        *sql.DB
	connector *respool.Connector // db's pool, its Stats and breaker
	limiter   *ratelimit.Limiter
	http.Handler
}

func newService(ctx context.Context, o options) (*service, error) {
	o.maxConns, o.maxQueue = orDefault(o.maxConns, 4), orDefault(o.maxQueue, 16)
	if o.limit == (ratelimit.Limit{}) {
		o.limit = ratelimit.Limit{Permits: 100, Period: time.Second, Burst: 100}
	}
	if o.openDelay == 0 {
		o.openDelay = 30 * time.Second
	}
	// WAL lets readers run beside the writer; busy_timeout makes a writer
	// wait for the lock instead of failing.
	dsn := "file:" + filepath.ToSlash(filepath.Join(o.dir, "orders.db")) +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)" +
		"&respool_driver=sqlite&respool_name=orders" +
		"&respool_max_conns=" + strconv.Itoa(o.maxConns) + "&respool_max_queue=" + strconv.Itoa(o.maxQueue) +
		"&respool_acquire_timeout=2s&respool_close_timeout=5s&respool_breaker_open_delay=" + o.openDelay.String()
	db, err := sql.Open("respool", dsn)
	if err != nil {
		return nil, err
	}
	// A *sql.DB from sql.Open reaches its Connector through ConnectorOf.
	connector, err := respool.ConnectorOf(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &service{db: db, connector: connector}
	if err := s.setUp(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if s.limiter, err = ratelimit.New(ratelimit.Config{Name: "requests", Limit: o.limit}); err != nil {
		db.Close()
		return nil, err
	}
	guard, err := httpguard.NewServer(httpguard.ServerConfig{})
	if err != nil {
		db.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /orders/{id}", guard.Handler(s.order))
	s.Handler = guard.Admit(s.limiter)(mux)
	return s, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (s *service) setUp(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL, qty INTEGER NOT NULL);
		INSERT INTO orders (id, item, qty) VALUES (1, 'espresso', 2), (2, 'croissant', 1), (3, 'tea', 4)`)
	return err
}

// order answers GET /orders/{id}. Its errors are httpguard's to answer: a
// full queue or an open breaker is a 503 with Retry-After, anything else a
// 500 that shows no detail.
func (s *service) order(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "the order id is a number", http.StatusBadRequest)
		return nil
	}
	var o struct {
		ID   int64  `json:"id"`
		Item string `json:"item"`
		Qty  int    `json:"qty"`
	}
	err = s.db.QueryRowContext(r.Context(), "SELECT id, item, qty FROM orders WHERE id = ?", id).Scan(&o.ID, &o.Item, &o.Qty)
	if errors.Is(err, sql.ErrNoRows) {
		http.Error(w, "no such order", http.StatusNotFound)
		return nil
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(o)
}

// Close closes the database: its pool's connections are closed.
func (s *service) Close() error { return s.db.Close() }
