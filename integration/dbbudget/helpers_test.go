package dbbudget

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var budgets atomic.Int64

// budgetName is a name no other budget of the suite has.
func budgetName(t *testing.T) string { return t.Name() + "-" + strconv.FormatInt(budgets.Add(1), 10) }

// engines runs fn on PostgreSQL and on MariaDB, each a subtest.
func engines(t *testing.T, fn func(t *testing.T, s *servers.Server)) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) { fn(t, s) })
	}
}

// as is s reached as user (one of budgetUsers).
func as(s *servers.Server, user string) *servers.Server {
	return &servers.Server{Kind: s.Kind, Backend: s.Backend, Host: s.Host, Port: s.Port,
		User: user, Password: budgetPassword, Database: s.Database}
}

// newBudget is a Budget, as a process has, whose coordinating session logs
// in to s as user; closed when the test ends.
func newBudget(t *testing.T, s *servers.Server, user, name string, max int, timeout time.Duration) *dbbudget.Budget {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := dbbudget.New(ctx, dbbudget.Config{DSN: as(s, user).DSN(), Name: name, Max: max, Timeout: timeout, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// connector is a respool Connector on s, as the test user, whose pool of
// maxConns shares b; closed when the test ends.
func connector(t *testing.T, s *servers.Server, b pool.Budget, maxConns int) (*sql.DB, *respool.Connector) {
	t.Helper()
	// 2s: the bound of a wait beyond the budget, and of each dial (a SCRAM
	// login under -race on a busy machine can take a good part of a second).
	cfg, err := respool.ParseDSN(s.DSN() + "&respool_acquire_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pool.MaxObjects, cfg.Pool.Budget, cfg.Pool.Logger = maxConns, b, quiet
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// sessionsOf counts the sessions of user at s, but admin's.
func sessionsOf(t *testing.T, admin *sql.Conn, s *servers.Server, user string) int {
	t.Helper()
	q := `SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`
	if s.Kind == servers.KindMariaDB {
		q = `SELECT COUNT(*) FROM information_schema.processlist WHERE user = ? AND id <> CONNECTION_ID()`
	}
	var n int
	if err := admin.QueryRowContext(context.Background(), q, user).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// killSessionsOf ends, at s, every session of user, as an operator or a
// network cut would.
func killSessionsOf(t *testing.T, admin *sql.Conn, s *servers.Server, user string) {
	t.Helper()
	ctx := context.Background()
	if s.Kind == servers.KindPostgres {
		if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, user); err != nil {
			t.Fatal(err)
		}
		return
	}
	rows, err := admin.QueryContext(ctx, `SELECT id FROM information_schema.processlist WHERE user = ?`, user)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := admin.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10)); err != nil {
			t.Fatal(err)
		}
	}
}

// mustBeRefused fails the test unless b refuses an Acquire as exhausted.
func mustBeRefused(t *testing.T, b *dbbudget.Budget, what string) {
	t.Helper()
	if _, err := b.Acquire(context.Background()); !errors.Is(err, pool.ErrBudgetExhausted) {
		t.Fatalf("%s: Acquire = %v; want ErrBudgetExhausted", what, err)
	}
}

// fakePool is a pool attached to a Budget as pool.Pool attaches (Attach's
// contract, pool.Reclaimer): its objects are slots, busy or idle; reclaim
// destroys idle ones at once, and with inUse the next ones given back,
// until n are destroyed. It records the requests.
type fakePool struct {
	b *dbbudget.Budget

	mu        sync.Mutex
	busy      []func() // releases of the objects in use
	idle      []func() // of the idle ones, oldest first
	owed      int      // objects given back to destroy (reclaim with inUse)
	destroyed int
	last      [2]int // the last request: n, and 1 for inUse
	calls     int
}

// newFakePool attaches a fakePool to b, detached when the test ends.
func newFakePool(t *testing.T, b *dbbudget.Budget) *fakePool {
	p := &fakePool{b: b}
	t.Cleanup(b.Attach(p.reclaim))
	return p
}

func (p *fakePool) reclaim(n int, inUse bool) {
	p.mu.Lock()
	var destroy []func()
	for n > 0 && len(p.idle) > 0 {
		destroy, p.idle = append(destroy, p.idle[0]), p.idle[1:]
		n--
	}
	p.owed = 0
	if inUse {
		p.owed = n
	}
	p.destroyed += len(destroy)
	in := 0
	if inUse {
		in = 1
	}
	p.last = [2]int{n + len(destroy), in}
	p.calls++
	p.mu.Unlock()
	for _, r := range destroy {
		r()
	}
}

// take makes an object in use if the budget gives a slot (as a pool's
// creation asks it); false if refused.
func (p *fakePool) take(t *testing.T) bool {
	t.Helper()
	r, err := p.b.Acquire(context.Background())
	if errors.Is(err, pool.ErrBudgetExhausted) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.busy = append(p.busy, r)
	p.mu.Unlock()
	return true
}

// giveBack gives an object in use back: destroyed if owed, idle
// otherwise; it reports whether it was destroyed.
func (p *fakePool) giveBack() (destroyed bool) {
	p.mu.Lock()
	r := p.busy[0]
	p.busy = p.busy[1:]
	if p.owed > 0 {
		p.owed--
		p.destroyed++
		p.mu.Unlock()
		r()
		return true
	}
	p.idle = append(p.idle, r)
	p.mu.Unlock()
	return false
}

// lastRequest returns the last reclaim request (n, inUse) and the number
// of requests.
func (p *fakePool) lastRequest() (n int, inUse bool, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last[0], p.last[1] == 1, p.calls
}

func (p *fakePool) counts() (busy, idle, destroyed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.busy), len(p.idle), p.destroyed
}
