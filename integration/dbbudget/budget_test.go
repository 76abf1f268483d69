package dbbudget

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// Two processes' pools of 4 share a budget of 5: however many connections
// their callers ask for, the server holds no more than 5 of theirs (the
// coordinating sessions, of their own users, left out); a caller beyond
// it waits (here its acquire timeout ends the wait) instead of dialing;
// when a pool closes, its slots serve the other.
func TestConnectionsOfTwoPoolsStayWithinTheBudget(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		name := budgetName(t)
		ba := newBudget(t, s, "budget_a", name, 5, time.Second)
		bb := newBudget(t, s, "budget_b", name, 5, time.Second)
		dba, _ := connector(t, s, ba, 4)
		dbb, cb := connector(t, s, bb, 4)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin := servers.AdminConn(t, ctx, s)
		hold := func(db *sql.DB) (*sql.Conn, error) {
			c, err := db.Conn(ctx)
			if err == nil {
				err = c.PingContext(ctx)
			}
			return c, err
		}
		var held []*sql.Conn
		for _, db := range []*sql.DB{dba, dba, dba, dba, dbb} {
			c, err := hold(db)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		if _, err := hold(dbb); !errors.Is(err, pool.ErrAcquireTimeout) {
			t.Fatalf("a sixth connection = %v; want its wait ended by the acquire timeout", err)
		}
		if n := sessionsOf(t, admin, s, s.User); n != 5 {
			t.Errorf("the server holds %d sessions of the pools; want 5 (the budget)", n)
		}
		if n := sessionsOf(t, admin, s, "budget_a") + sessionsOf(t, admin, s, "budget_b"); n != 2 {
			t.Errorf("the server holds %d coordinating sessions; want 2 (one a process)", n)
		}
		if st := cb.Stats(); st.Creates != 1 || st.EffectiveMaxObjects != 1 {
			t.Errorf("the second pool: %d connections opened, effective max %d; want 1, 1 (no dial without a slot)", st.Creates, st.EffectiveMaxObjects)
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
		if st := bb.Stats(); st.Held != 2 || st.StoreDown || st.Unregistered != 0 {
			t.Errorf("second budget %+v; want 2 held, the session up", st)
		}
		held[4].Close()
	})
}

// A holder whose coordinating session the server ends (an operator's
// pg_terminate_backend or KILL; a network cut the server sees) frees its
// slots at once: another process gets one within 1s. The holder keeps
// within the slots it held meanwhile, and once back locks what is free
// and counts the slot the other took as unregistered.
func TestAKilledSessionFreesItsSlotsWithinASecond(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		name := budgetName(t)
		holder := newBudget(t, s, "budget_a", name, 3, time.Second)
		other := newBudget(t, s, "budget_b", name, 3, time.Second)
		ctx := context.Background()
		servers.AcquireSlots(t, holder, 3)
		mustBeRefused(t, other, "a full budget")
		admin := servers.AdminConn(t, ctx, s)
		killed := time.Now()
		killSessionsOf(t, admin, s, "budget_a")
		within, cancel := context.WithDeadline(ctx, killed.Add(time.Second))
		defer cancel()
		var releaseOther func()
		servers.WaitFor(t, within, "a slot of the killed holder, within 1s", func() (bool, error) {
			var err error
			releaseOther, err = other.Acquire(ctx)
			if errors.Is(err, pool.ErrBudgetExhausted) {
				return false, nil
			}
			return err == nil, err
		})
		t.Logf("a slot came back %v after the kill", time.Since(killed))
		back, cancel2 := context.WithTimeout(ctx, 10*time.Second)
		defer cancel2()
		servers.WaitFor(t, back, "the holder's session back", func() (bool, error) {
			st := holder.Stats()
			return !st.StoreDown && st.Held == 3 && st.Unregistered == 1, nil
		})
		mustBeRefused(t, holder, "a holder beyond the budget (one of its slots taken by the other)")
		releaseOther()
		servers.WaitFor(t, back, "the holder's third slot locked again once the other gave it back", func() (bool, error) {
			st := holder.Stats()
			return st.Held == 3 && st.Unregistered == 0, nil
		})
		mustBeRefused(t, other, "a budget full again")
	})
}

// A caller whose context has ended gets its context's error; the session,
// which answers, is not taken for lost.
func TestACallersEndIsNotTheSessionLost(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		b := newBudget(t, s, "budget_a", budgetName(t), 2, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.Acquire(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire with a cancelled context = %v; want context.Canceled", err)
		}
		if st := b.Stats(); st.StoreDown || st.Held != 0 || st.StoreErrors != 0 {
			t.Errorf("after a cancelled Acquire: %+v; want the session up, nothing held, no store error", st)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Acquire after Close = %v; want an error saying it is closed", err)
		}
	})
}

// While the coordinating session does not answer (the network path to the
// server drops every packet), an Acquire returns within its Timeout and
// the process keeps within the slots it held (one given back can be taken
// again, no more); once the path is back, the session is dialled again
// and its slots locked again.
func TestALostSessionKeepsWithinTheSlotsHeld(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		proxy, err := servers.StartProxy(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		const timeout = 200 * time.Millisecond
		b := newBudget(t, proxy.Server(as(s, "budget_a")), "budget_a", budgetName(t), 10, timeout)
		releases := servers.AcquireSlots(t, b, 2)
		proxy.StopForwarding()
		defer proxy.Forward()
		began := time.Now()
		releases[1]() // a connection closed: its lock cannot be given back
		again, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatalf("Acquire of a slot held before, session lost = %v; want it", err)
		}
		mustBeRefused(t, b, "beyond the slots held, session lost")
		if d := time.Since(began); d > 8*timeout {
			t.Errorf("a release and two Acquires with the session lost took %v; want each within 2×Timeout (%v)", d, timeout)
		}
		if st := b.Stats(); !st.StoreDown || st.Held != 2 || st.Unregistered != 2 {
			t.Errorf("session lost: %+v; want down, 2 held, both unregistered", st)
		}
		proxy.Forward()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		servers.WaitFor(t, ctx, "both slots locked again on a new session", func() (bool, error) {
			st := b.Stats()
			return !st.StoreDown && st.Unregistered == 0 && st.Held == 2, nil
		})
		again()
		releases[0]()
	})
}
