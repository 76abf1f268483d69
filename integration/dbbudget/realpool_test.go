package dbbudget

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/integration/servers"
)

// attachSpy is a Budget that counts the pools attached to it (a pool
// attaches at New when it knows pool.Reclaimer).
type attachSpy struct {
	*dbbudget.Budget
	attached atomic.Int32
}

func (s *attachSpy) Attach(reclaim func(n int, inUse bool)) (detach func()) {
	s.attached.Add(1)
	return s.Budget.Attach(reclaim)
}

// reclaimingConnector is connector's, on a budget whose pool must attach:
// the test fails if the pool does not attach itself.
func reclaimingConnector(t *testing.T, s *servers.Server, b *dbbudget.Budget, maxConns int) (*sql.DB, *respool.Connector) {
	t.Helper()
	spy := &attachSpy{Budget: b}
	db, c := connector(t, s, spy, maxConns)
	if spy.attached.Load() == 0 {
		t.Fatal("the pool did not attach itself to its pool.Reclaimer")
	}
	return db, c
}

// twoRealPools are two processes' pools of 5 sharing a budget of 5 on s
// (a share of 2 each); it returns the second's budget too.
func twoRealPools(t *testing.T, s *servers.Server) (dba *sql.DB, ca *respool.Connector, dbb *sql.DB, bb *dbbudget.Budget) {
	t.Helper()
	name := budgetName(t)
	dba, ca = reclaimingConnector(t, s, newBudget(t, s, "budget_a", name, 5, time.Second), 5)
	bb = newBudget(t, s, "budget_b", name, 5, time.Second)
	dbb, _ = reclaimingConnector(t, s, bb, 5)
	return dba, ca, dbb, bb
}

// holdConns takes n connections of db, each pinged (a session at the
// server).
func holdConns(t *testing.T, ctx context.Context, db *sql.DB, n int) []*sql.Conn {
	t.Helper()
	var held []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	return held
}

// Real pools: one holds every connection of the budget idle; another
// process needs 2 (its share of 5 between two): it has them within 1s, the
// first pool having closed 3 of its idle connections, and the server never
// holds more than 5 of theirs.
func TestRealPoolsIdleConnectionsGoToAProcessThatNeedsThem(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin := servers.AdminConn(t, ctx, s)
		dba, ca, dbb, _ := twoRealPools(t, s)
		for _, c := range holdConns(t, ctx, dba, 5) {
			c.Close()
		}
		began := time.Now()
		got := holdConns(t, ctx, dbb, 2)
		took := time.Since(began)
		t.Logf("the second process had its 2 connections after %v", took)
		if took > time.Second {
			t.Errorf("the second process waited %v for its share; want within 1s", took)
		}
		if n := sessionsOf(t, admin, s, s.User); n > 5 {
			t.Errorf("the server holds %d sessions of the pools; want at most 5", n)
		}
		if y := ca.Stats().Destroys.Yielded; y != 3 {
			t.Errorf("the first pool yielded %d connections; want 3 (over its share of 2)", y)
		}
		for _, c := range got {
			c.Close()
		}
	})
}

// Real pools: one holds every connection in use; a newcomer's callers
// wait for 2. As the first gives its connections back, they are closed
// for the newcomer, which has its 2 within 1s of the second give-back.
func TestRealPoolsGiveBacksGoToANewcomerBelowItsShare(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin := servers.AdminConn(t, ctx, s)
		dba, ca, dbb, bb := twoRealPools(t, s)
		held := holdConns(t, ctx, dba, 5)
		got := make(chan *sql.Conn, 2)
		for range 2 {
			go func() {
				c, err := dbb.Conn(ctx)
				if err == nil {
					err = c.PingContext(ctx)
				}
				if err != nil {
					t.Error(err)
				}
				got <- c
			}()
		}
		servers.WaitFor(t, ctx, "the newcomer refused (its callers wait)", func() (bool, error) { return bb.Stats().Refused > 0, nil })
		var theirs []*sql.Conn
		for i, c := range held {
			c.Close()
			if i == 1 {
				within := time.After(time.Second)
				for range 2 {
					select {
					case c := <-got:
						theirs = append(theirs, c)
					case <-within:
						t.Fatalf("the newcomer did not have its 2 connections within 1s of the holder's second give-back: %+v", bb.Stats())
					}
				}
			}
			if n := sessionsOf(t, admin, s, s.User); n > 5 {
				t.Errorf("the server holds %d sessions of the pools; want at most 5", n)
			}
		}
		if y := ca.Stats().Destroys.Yielded; y < 2 || y > 3 {
			t.Errorf("the holder yielded %d connections; want 2 for the newcomer's share, or 3 (one idle over its share while the newcomer still wanted)", y)
		}
		for _, c := range theirs {
			c.Close()
		}
	})
}
