package budget

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// Redis restarted empty: a process that holds no slot is given none before
// the holders' leases are registered again (it would be a second
// connection for one slot): every Acquire it makes once Redis answers is
// refused while the holder keeps both slots of the budget; a slot the
// holder gives back then goes to it.
func TestARestartedRedisGivesNoSlotBeforeTheHoldersRegisterAgain(t *testing.T) {
	name := budgetName(t)
	holder, _ := newBudget(t, name, 2, 3*time.Second)
	other, _ := newBudget(t, name, 2, 3*time.Second)
	ctx := context.Background()
	var releases []func()
	for range 2 {
		r, err := holder.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	if err := rds.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted { // for the next tests
			if err := rds.Start(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}()
	if _, err := other.Acquire(ctx); !errors.Is(err, pool.ErrBudgetExhausted) { // it sees Redis down
		t.Fatalf("Acquire with Redis down, none held = %v; want ErrBudgetExhausted", err)
	}
	if err := rds.Start(ctx); err != nil { // empty: no persistence
		t.Fatal(err)
	}
	restarted = true
	until := time.Now().Add(2 * time.Second) // past the settling (TTL/2) and the holder's renewal
	for time.Now().Before(until) {
		r, err := other.Acquire(ctx)
		if err == nil {
			r()
			t.Fatalf("a process holding none got a slot %v before the end of the check, while the holder kept both: the sum went over the budget", time.Until(until))
		}
		if !errors.Is(err, pool.ErrBudgetExhausted) {
			t.Fatal(err)
		}
	}
	if st := holder.Stats(); st.Unregistered != 0 || st.Held != 2 || st.StoreDown {
		t.Fatalf("holder %+v; want both leases registered again", st)
	}
	releases[0]()
	within, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	servers.WaitFor(t, within, "the slot given back goes to the other", func() (bool, error) {
		r, err := other.Acquire(ctx)
		if errors.Is(err, pool.ErrBudgetExhausted) {
			return false, nil
		}
		if err == nil {
			r()
		}
		return err == nil, err
	})
	releases[1]()
}
