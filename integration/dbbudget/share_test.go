package dbbudget

import (
	"context"
	"testing"
	"time"

	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/integration/servers"
)

// A process holding every slot idle, and another needing 2 (its share of
// 5 between two): the holder's pool is asked for the 3 over its share,
// destroys them (idle: at once), and the other has its 2 within 1s of its
// first refusal. Nothing more is destroyed.
func TestIdleSlotsOverTheShareGoToAProcessThatNeedsThem(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		name := budgetName(t)
		ba, pa := holdingAll(t, s, name, 5)
		for range 5 {
			pa.giveBack()
		}
		bb := newBudget(t, s, "budget_b", name, 5, time.Second)
		pb := newFakePool(t, bb)
		if pb.take(t) {
			t.Fatal("the newcomer got a slot of a full budget")
		}
		refused := time.Now()
		within, cancel := context.WithDeadline(context.Background(), refused.Add(time.Second))
		defer cancel()
		got := 0
		servers.WaitFor(t, within, "the newcomer's 2 slots, within 1s of its refusal", func() (bool, error) {
			if pb.take(t) {
				got++
			}
			return got == 2, nil
		})
		t.Logf("the newcomer had its share %v after its first refusal", time.Since(refused))
		if _, idle, destroyed := pa.counts(); destroyed != 3 || idle != 2 {
			t.Errorf("the holder destroyed %d and keeps %d idle; want 3 (over its share of 2) and 2", destroyed, idle)
		}
		if st := ba.Stats(); st.Held != 2 || st.Share != 2 || st.Members != 2 || st.Borrowed != 0 {
			t.Errorf("the holder's budget %+v; want 2 held, share 2 of 2 members, none borrowed", st)
		}
	})
}

// A process holding every slot in use, and a newcomer below its share
// (2 of 5 between two): the holder's objects given back are destroyed
// until the newcomer has its share, and no more: once the newcomer stops
// wanting, those given back stay idle.
func TestGiveBacksGoToANewcomerBelowItsShare(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		name := budgetName(t)
		ba, pa := holdingAll(t, s, name, 5)
		bb := newBudget(t, s, "budget_b", name, 5, time.Second)
		pb := newFakePool(t, bb)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got := 0
		for want := 1; want <= 2; want++ {
			over := 5 - want + 1 - 2 // the holder's slots over its share
			servers.WaitFor(t, ctx, "the holder asked for its objects in use", func() (bool, error) {
				if pb.take(t) { // the newcomer's pool asks again, as a pool held back does
					t.Fatal("the newcomer got a slot the holder did not give back")
				}
				n, inUse, _ := pa.lastRequest()
				return n == over && inUse, nil
			})
			if !pa.giveBack() {
				t.Fatalf("give-back %d of the holder was kept; want it destroyed for the newcomer below its share", want)
			}
			servers.WaitFor(t, ctx, "the newcomer takes the slot given back", func() (bool, error) {
				if pb.take(t) {
					got++
				}
				return got == want, nil
			})
		}
		servers.WaitFor(t, ctx, "the holder no longer asked (the newcomer stopped wanting)", func() (bool, error) {
			n, _, _ := pa.lastRequest()
			return n == 0, nil
		})
		for i := range 3 {
			if pa.giveBack() {
				t.Errorf("give-back %d of the holder, the newcomer at its share and wanting no more, was destroyed; want it kept idle", 3+i)
			}
		}
		if busy, idle, destroyed := pa.counts(); busy != 0 || idle != 3 || destroyed != 2 {
			t.Errorf("the holder: %d busy, %d idle, %d destroyed; want 0, 3, 2", busy, idle, destroyed)
		}
		if st := bb.Stats(); st.Held != 2 || st.Share != 2 {
			t.Errorf("the newcomer's budget %+v; want 2 held, its share 2", st)
		}
		if st := ba.Stats(); st.Held != 3 || st.Share != 2 || st.Members != 2 || st.Borrowed != 1 {
			t.Errorf("the holder's budget %+v; want 3 held, share 2 of 2 members, 1 borrowed", st)
		}
	})
}

// holdingAll is a process whose pool holds every slot of the budget name
// of max on s, in use.
func holdingAll(t *testing.T, s *servers.Server, name string, max int) (*dbbudget.Budget, *fakePool) {
	t.Helper()
	b := newBudget(t, s, "budget_a", name, max, time.Second)
	p := newFakePool(t, b)
	for range max {
		if !p.take(t) {
			t.Fatal("the holder was refused a slot of an empty budget")
		}
	}
	return b, p
}
