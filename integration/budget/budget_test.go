package budget

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/redisbudget"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var budgets atomic.Int64

// budgetName is a name no other budget of the suite's Redis has.
func budgetName(t *testing.T) string { return t.Name() + "-" + strconv.FormatInt(budgets.Add(1), 10) }

// newBudget is a Budget on the suite's Redis through a client of its own,
// as each process has; closed (then its client) when the test ends.
func newBudget(t *testing.T, name string, max int, ttl time.Duration) (*redisbudget.Budget, *redis.Client) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	b, err := redisbudget.New(redisbudget.Config{Client: rdb, Name: name, Max: max, TTL: ttl, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = rdb.Close()
	})
	return b, rdb
}

// connector is a respool Connector on the suite's PostgreSQL whose pool of
// maxConns shares b; closed when the test ends.
func connector(t *testing.T, b pool.Budget, maxConns int) (*sql.DB, *respool.Connector) {
	t.Helper()
	// 2s: the bound of a wait beyond the budget, and of each dial (a SCRAM
	// login under -race on a busy machine can take a good part of a second).
	return connectorWaiting(t, b, maxConns, 2*time.Second)
}

// connectorWaiting is connector with the pool's acquire timeout.
func connectorWaiting(t *testing.T, b pool.Budget, maxConns int, acquire time.Duration) (*sql.DB, *respool.Connector) {
	t.Helper()
	cfg, err := respool.ParseDSN(pg.DSN() + "&respool_acquire_timeout=" + acquire.String())
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

// serverSessions counts the sessions of the test user at the server, but
// the one asking.
func serverSessions(t *testing.T, admin *sql.DB) int {
	t.Helper()
	n, err := pg.CountConnections(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two processes' pools of 4 share a budget of 5: however many connections
// their callers ask for, the server never holds more than 5 of theirs; a
// caller beyond it waits for a connection given back (here, its acquire
// timeout ends the wait: nobody gives one back) instead of dialing; when a
// pool closes, its slots serve the other.
func TestConnectionsOfSeveralPoolsStayWithinTheBudget(t *testing.T) {
	name := budgetName(t)
	ba, _ := newBudget(t, name, 5, 3*time.Second)
	bb, _ := newBudget(t, name, 5, 3*time.Second)
	dba, _ := connector(t, ba, 4)
	dbb, cb := connector(t, bb, 4)
	admin, err := sql.Open("pgx", pg.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hold := func(db *sql.DB) (*sql.Conn, error) {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		return c, err
	}
	var held []*sql.Conn
	for range 4 {
		c, err := hold(dba)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	c, err := hold(dbb)
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, c)
	if _, err := hold(dbb); !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("a sixth connection = %v; want its wait ended by the acquire timeout", err)
	}
	if n := serverSessions(t, admin); n != 5 {
		t.Errorf("the server holds %d sessions of the pools; want 5 (the budget)", n)
	}
	if s := cb.Stats(); s.Creates != 1 || s.EffectiveMaxObjects != 1 {
		t.Errorf("the second pool: %d connections opened, effective max %d; want 1, 1 (no dial without a slot)", s.Creates, s.EffectiveMaxObjects)
	}
	for _, c := range held[:4] {
		c.Close()
	}
	dba.Close() // the first process ends: its slots are given back as its connections close
	servers.WaitFor(t, ctx, "a slot for the second pool once the first closed", func() (bool, error) {
		c, err := hold(dbb)
		if err != nil {
			return false, nil // its acquire timeout: the next probe may find the slot
		}
		return true, c.Close()
	})
	if st := bb.Stats(); st.Held != 2 || st.StoreDown {
		t.Errorf("second budget %+v; want 2 held, Redis up", st)
	}
	held[4].Close()
}

// A process that dies holding slots (its client gone, no lease given
// back) frees them within the leases' TTL.
func TestSlotsOfADeadProcessComeBackWithinTheTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	name := budgetName(t)
	dead, deadClient := newBudget(t, name, 3, ttl)
	alive, _ := newBudget(t, name, 3, ttl)
	ctx := context.Background()
	for range 3 {
		if _, err := dead.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alive.Acquire(ctx); !errors.Is(err, pool.ErrBudgetExhausted) {
		t.Fatalf("Acquire of a full budget = %v; want ErrBudgetExhausted", err)
	}
	died := time.Now()
	_ = deadClient.Close() // the process is gone: nothing renews or gives back its leases
	within, cancel := context.WithTimeout(ctx, 3*ttl)
	defer cancel()
	servers.WaitFor(t, within, "a slot of the dead holder, within the TTL", func() (bool, error) { // on Redis's clock: polled
		_, err := alive.Acquire(ctx)
		if errors.Is(err, pool.ErrBudgetExhausted) {
			return false, nil
		}
		return err == nil, err
	})
	if d := time.Since(died); d < ttl/2 {
		t.Errorf("a slot came back %v after the holder died; want about the TTL (%v)", d, ttl)
	}
}

// While Redis does not answer, an Acquire returns within its Timeout; a
// process keeps within the slots it held (one given back can be taken
// again, no more), and its leases are registered again when Redis
// answers.
func TestRedisDownKeepsWithinTheSlotsHeld(t *testing.T) {
	name := budgetName(t)
	b, _ := newBudget(t, name, 10, 3*time.Second)
	ctx := context.Background()
	releases := servers.AcquireSlots(t, b, 2)
	restart := killRedis(t)
	releases[1]() // a connection closed while Redis is down: its call runs out of time
	began := time.Now()
	if _, err := b.Acquire(ctx); !errors.Is(err, pool.ErrBudgetExhausted) {
		t.Fatalf("Acquire of the slot given back, Redis down = %v; want ErrBudgetExhausted (the call that gave it back may have reached Redis)", err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, pool.ErrBudgetExhausted) {
		t.Fatalf("Acquire beyond the slots held, Redis down = %v; want ErrBudgetExhausted", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("two Acquires with Redis down took %v; want each within its 100ms Timeout", d)
	}
	if st := b.Stats(); !st.StoreDown || st.Held != 1 {
		t.Errorf("Redis down: %+v; want down, 1 held", st)
	}
	restart()
	within, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	servers.WaitFor(t, within, "the lease registered again within a renewal", func() (bool, error) {
		st := b.Stats()
		return !st.StoreDown && st.Unregistered == 0 && st.Held == 1, nil
	})
	releases[0]()
}

// A caller whose context ends during an Acquire gets its context's error;
// Redis, which answers, is not taken for down.
func TestACallersEndIsNotRedisDown(t *testing.T) {
	b, _ := newBudget(t, budgetName(t), 2, 3*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context = %v; want context.Canceled", err)
	}
	if st := b.Stats(); st.StoreDown || st.Held != 0 || st.StoreErrors != 0 {
		t.Errorf("after a cancelled Acquire: %+v; want Redis up, nothing held, no store error", st)
	}
}
