package respool

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool/pool"
)

// registerFailing registers the scheme test-failing once (a scheme
// registered twice panics).
var registerFailing sync.Once

// nopBudget is a pool.Budget of slots without end.
type nopBudget struct{}

func (nopBudget) Acquire(context.Context) (func(), error) { return func() {}, nil }

// respool_budget names a budget by its scheme: one no module registered is
// refused by NewConnector with an error that names the key and says which
// module to import, and holds no password.
func TestSharedBudgetOfAnUnregisteredScheme(t *testing.T) {
	cfg, err := ParseDSN("postgres://app:pw@db/app?respool_budget=" +
		"redis%3A%2F%2F%3As3cret%40redis%3A6379%2F0%3Fname%3Dorders%26max%3D200")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SharedBudget != "redis://:s3cret@redis:6379/0?name=orders&max=200" {
		t.Fatalf("SharedBudget = %q", cfg.SharedBudget)
	}
	_, err = NewConnector(*cfg)
	var de *DSNError
	if !errors.As(err, &de) || de.Key != "respool_budget" || !errors.Is(err, ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "redisbudget") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("NewConnector = %v; want a DSNError naming respool_budget and the module to import, without the password", err)
	}
}

// An opener's error is returned with its passwords redacted, and both
// SharedBudget and Pool.Budget set is an error.
func TestSharedBudgetOpenerErrors(t *testing.T) {
	registerFailing.Do(func() {
		RegisterBudget("test-failing", func(spec, _ string) (pool.Budget, error) {
			return nil, fmt.Errorf("cannot reach %s", spec)
		})
	})
	cfg := Config{DriverName: "pgx", DSN: "postgres://app:pw@db/app", SharedBudget: "test-failing://:s3cret@host/"}
	_, err := NewConnector(cfg)
	if err == nil || !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("NewConnector = %v; want the opener's error, redacted", err)
	}
	cfg.Pool.Budget = nopBudget{}
	if _, err := NewConnector(cfg); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Fatalf("NewConnector with both budgets = %v; want refused", err)
	}
}

// The password of a budget URL is not printed by String, %#v or slog.
func TestSharedBudgetPasswordIsRedacted(t *testing.T) {
	cfg := Config{DriverName: "pgx", DSN: "postgres://db/app", SharedBudget: "redis://:s3cret@redis:6379/0?name=o&max=2"}
	var log bytes.Buffer
	slog.New(slog.NewTextHandler(&log, nil)).Info("config", "cfg", cfg)
	for what, s := range map[string]string{"String": cfg.String(), "%#v": fmt.Sprintf("%#v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "slog": log.String()} {
		if strings.Contains(s, "s3cret") || !strings.Contains(s, "6379") {
			t.Errorf("%s = %s; want the budget URL without its password", what, s)
		}
	}
	if got := cfg.FormatDSN(); !strings.Contains(got, "s3cret") {
		t.Errorf("FormatDSN = %s; want the password kept (it is the DSN)", got)
	}
}

// countingBudget counts the slots held, and what was held when it was
// closed.
type countingBudget struct {
	mu             sync.Mutex
	held           int
	heldWhenClosed int
	closed         bool
	done           chan struct{} // closed by Close
}

func (b *countingBudget) Acquire(context.Context) (func(), error) {
	b.mu.Lock()
	b.held++
	b.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { b.mu.Lock(); b.held--; b.mu.Unlock() }) }, nil
}

func (b *countingBudget) Close() error {
	b.mu.Lock()
	if !b.closed {
		close(b.done)
	}
	b.heldWhenClosed, b.closed = b.held, true
	b.mu.Unlock()
	return nil
}

func (b *countingBudget) state() (closed bool, heldWhenClosed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed, b.heldWhenClosed
}

var (
	registerCounting sync.Once
	lastCounting     atomic.Pointer[countingBudget] // the one scheme test-counting opened last
)

// The budget a Connector opened is closed once its last connection is,
// not at Close while connections it counts are still open (the store would
// free their slots for other processes while they exist).
func TestSharedBudgetIsClosedAfterTheLastConnection(t *testing.T) {
	registerCounting.Do(func() {
		RegisterBudget("test-counting", func(string, string) (pool.Budget, error) {
			b := &countingBudget{done: make(chan struct{})}
			lastCounting.Store(b)
			return b, nil
		})
	})
	c, err := NewConnector(Config{Connector: adapterConnector{&adapterConn{valid: true}}, SharedBudget: "test-counting?x"})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	counting := lastCounting.Load()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if closed, _ := counting.state(); closed {
		t.Fatal("the budget was closed while a connection it counts is open")
	}
	_ = conn.Close()
	_ = db.Close()
	select {
	case <-counting.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the budget was not closed after the last connection")
	}
	if _, held := counting.state(); held != 0 {
		t.Fatalf("closed with %d slots held", held)
	}
}
