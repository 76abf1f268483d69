package budget

import (
	"context"
	"database/sql"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/redisbudget"
)

// shareWithin is how soon a process that wants connections gets them from
// another's (issue 18's target, 1s, with RESPOOL_BUDGET_TARGETS=1; else a
// bound that holds under -race on a busy 2-core machine, where each SCRAM
// login takes a good part of a second: the time taken is logged).
func shareWithin() time.Duration {
	if os.Getenv("RESPOOL_BUDGET_TARGETS") == "1" {
		return time.Second
	}
	return 5 * time.Second
}

// twoProcesses are two processes' Budgets of 6 slots in all and their
// pools of 6, both members of the budget once it returns.
func twoProcesses(ctx context.Context, t *testing.T) (ba, bb *redisbudget.Budget, dba, dbb *sql.DB, ca *respool.Connector) {
	t.Helper()
	name := budgetName(t)
	ba, _ = newBudget(t, name, 6, 3*time.Second)
	bb, _ = newBudget(t, name, 6, 3*time.Second)
	dba, ca = connectorWaiting(t, ba, 6, 10*time.Second)
	dbb, _ = connectorWaiting(t, bb, 6, 10*time.Second)
	servers.WaitFor(t, ctx, "both processes are members", func() (bool, error) { // the second saw the first
		return bb.Stats().Members == 2, nil
	})
	return ba, bb, dba, dbb, ca
}

// holdConns takes n connections of db and pings each.
func holdConns(ctx context.Context, t *testing.T, db *sql.DB, n int) []*sql.Conn {
	t.Helper()
	var cs []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

// takeTogether takes n connections of db at once, each caller holding its
// own until release is closed; it returns when all n are held, and how
// long that took.
func takeTogether(ctx context.Context, t *testing.T, db *sql.DB, n int, release <-chan struct{}) time.Duration {
	t.Helper()
	start := time.Now()
	var held, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		held.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			c, err := db.Conn(ctx)
			if err == nil {
				err = c.PingContext(ctx)
			}
			held.Done()
			if err != nil {
				errs <- err
				return
			}
			<-release
			c.Close()
		}()
	}
	held.Wait()
	took := time.Since(start)
	t.Cleanup(done.Wait)
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	return took
}

// A process may borrow the slots others leave unused, and gives back its
// idle connections beyond its share as soon as another process wants
// them: one process opens all 6 slots of a budget shared by two, leaves
// them idle, and the other's 3 callers are served within 1 s (not at the
// first one's idle timeout; see shareWithin).
func TestIdleConnectionsBeyondTheShareGoToAProcessThatWantsThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ba, _, dba, dbb, ca := twoProcesses(ctx, t)
	for _, c := range holdConns(ctx, t, dba, 6) { // borrows 3: nobody else wants them
		c.Close()
	}
	if st := ba.Stats(); st.Held != 6 || st.Share != 3 || st.Borrowed != 3 {
		t.Fatalf("first process %+v; want 6 held, share 3, 3 borrowed", st)
	}
	release := make(chan struct{})
	defer close(release)
	took := takeTogether(ctx, t, dbb, 3, release)
	if took > shareWithin() {
		t.Errorf("the second process's 3 callers were served in %v; want within %v", took, shareWithin())
	}
	if st := ba.Stats(); st.Held > 3 {
		t.Errorf("first process holds %d slots; want at most its share, 3", st.Held)
	}
	if d := ca.Stats().Destroys.Yielded; d < 3 {
		t.Errorf("first pool yielded %d connections; want 3", d)
	}
	t.Logf("second process served in %v", took)
}

// A process below its share is owed it: while another process holds every
// slot in use, its connections given back are closed (not handed to its own
// waiting callers) until the process below its share has its share.
func TestAProcessBelowItsShareGetsItFromABusyOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ba, _, dba, dbb, ca := twoProcesses(ctx, t)
	for _, c := range holdConns(ctx, t, dba, 6) { // 6 connections: the busy callers keep them in use
		c.Close()
	}
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 12 { // twice as many callers as connections: none is ever idle long
		busy.Add(1)
		go func() {
			defer busy.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := dba.ExecContext(ctx, "SELECT pg_sleep(0.01)"); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); busy.Wait() }()
	servers.WaitFor(t, ctx, "the busy process holds every slot", func() (bool, error) { return ba.Stats().Held == 6, nil })
	release := make(chan struct{})
	defer close(release)
	took := takeTogether(ctx, t, dbb, 3, release)
	if took > shareWithin() {
		t.Errorf("the process below its share got it in %v; want within %v", took, shareWithin())
	}
	if st := ba.Stats(); st.Held > 3 {
		t.Errorf("busy process holds %d slots; want at most its share, 3", st.Held)
	}
	t.Logf("share served in %v; busy pool yielded %d", took, ca.Stats().Destroys.Yielded)
}
