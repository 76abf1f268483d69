package budget

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
	_ "github.com/respool/respool/redisbudget" // respool_budget=redis://
)

// respool_budget in a DSN: two *sql.DBs opened with sql.Open("respool", …)
// share a budget of 2 in Redis; each one's Stats show the share; a bad
// budget URL is refused by sql.Open's first use with the key named; Close
// gives the slots back.
func TestBudgetFromTheDSN(t *testing.T) {
	name := budgetName(t)
	budget := "redis://" + rds.Addr + "/0?name=" + name + "&max=2&ttl=3s"
	dsn := pg.DSN() + "&respool_acquire_timeout=2s&respool_budget=" + url.QueryEscape(budget)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var dbs []*sql.DB
	for range 2 {
		db, err := sql.Open("respool", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	c1 := holdConns(ctx, t, dbs[0], 1)
	c2 := holdConns(ctx, t, dbs[1], 1)
	if _, err := dbs[1].Conn(ctx); !errors.Is(err, pool.ErrAcquireTimeout) {
		t.Fatalf("a third connection = %v; want its wait ended by the acquire timeout (budget 2)", err)
	}
	c, _ := respool.ConnectorOf(dbs[1])
	servers.WaitFor(t, ctx, "the second process's stats show its share", func() (bool, error) {
		b := c.Stats().Budget
		return b != nil && b.Members == 2 && b.Share == 1 && b.Held == 1, nil
	})
	c1[0].Close()
	c2[0].Close()
	if err := dbs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := dbs[1].Close(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rdb.Close()
	if n, err := rdb.ZCard(ctx, "respool:budget:{"+name+"}").Result(); err != nil || n != 0 {
		t.Fatalf("%d leases left after both closed (%v); want 0", n, err)
	}

	bad, err := sql.Open("respool", pg.DSN()+"&respool_budget="+url.QueryEscape("redis://:s3cret@"+rds.Addr+"/0?name=x&max=many"))
	if err == nil {
		err = bad.PingContext(ctx)
		bad.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "max") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a budget of max=many = %v; want an error naming max, without the password", err)
	}
}
