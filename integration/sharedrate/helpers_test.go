package sharedrate

import (
	"context"
	"database/sql"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/redisbudget"
)

var quiet = slog.New(slog.DiscardHandler)

var names atomic.Int64

// shareName is a Name no other test of the suite's Redis shares.
func shareName(t *testing.T) string { return t.Name() + "-" + strconv.FormatInt(names.Add(1), 10) }

// client is a Redis client of its own, as each process has; closed when
// the test ends.
func client(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// share makes the Guards built from c share name, through a client of
// their own, each call to Redis bounded by timeout (0: the default).
func share(t *testing.T, c *dbguard.Config, name string, timeout time.Duration) {
	t.Helper()
	if err := redisbudget.Share(c, redisbudget.ShareConfig{Client: client(t), Name: name, Timeout: timeout, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
}

// guard is the Guard of one process sharing name (see share), closed when
// the test ends.
func guard(t *testing.T, name string, c dbguard.Config, timeout time.Duration) *dbguard.Guard {
	t.Helper()
	share(t, &c, name, timeout)
	g, err := dbguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// through is create made through g's creation path (dbguard.Factory).
func through(g *dbguard.Guard, create func(context.Context) (int, error)) func(context.Context) (int, error) {
	return dbguard.Factory(g, pool.Factory[int]{Create: create}).Create
}

// connector is a respool Connector for cfg, its DB closed when the test
// ends.
func connector(t *testing.T, cfg *respool.Config) (*sql.DB, *respool.Connector) {
	t.Helper()
	cfg.Pool.Logger = quiet
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// awaitSubscribed waits until n Guards listen to name's signals.
func awaitSubscribed(t *testing.T, rdb *redis.Client, name string, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := "respool:signal:" + name
	servers.WaitFor(t, ctx, "the Guards' subscriptions", func() (bool, error) {
		subs, err := rdb.PubSubNumSub(ctx, ch).Result()
		return subs[ch] >= n, err
	})
}
