package dbbudget

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool"
	_ "github.com/respool/respool/dbbudget" // respool_budget=db?…
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// respool_budget=db?… in a DSN: two *sql.DBs opened with
// sql.Open("respool", …) share a budget of 2 held in the database they
// connect to; the Connector's Stats show the share; a bad parameter is
// refused naming it; Close ends the coordinating session.
func TestBudgetFromTheDSN(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		name := budgetName(t)
		dsn := withKeys(s.DSN(), "respool_acquire_timeout=2s&respool_budget="+url.QueryEscape("db?name="+name+"&max=2"))
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
		var held []*sql.Conn
		for _, db := range dbs {
			c, err := db.Conn(ctx)
			if err == nil {
				err = c.PingContext(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		if _, err := dbs[1].Conn(ctx); !errors.Is(err, pool.ErrAcquireTimeout) {
			t.Fatalf("a third connection = %v; want its wait ended by the acquire timeout (budget 2)", err)
		}
		c, _ := respool.ConnectorOf(dbs[1])
		servers.WaitFor(t, ctx, "the second process's stats show its share", func() (bool, error) {
			b := c.Stats().Budget
			return b != nil && b.Members == 2 && b.Share == 1 && b.Held == 1, nil
		})
		for _, c := range held {
			c.Close()
		}

		bad, err := sql.Open("respool", withKeys(s.DSN(), "respool_budget="+url.QueryEscape("db?name=x&max=many")))
		if err == nil {
			err = bad.PingContext(ctx)
			bad.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "max") {
			t.Fatalf("a budget of max=many = %v; want an error naming max", err)
		}
	})
}

// withKeys adds respool keys to a DSN of either form.
func withKeys(dsn, keys string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + keys
	}
	return dsn + "?" + keys
}
