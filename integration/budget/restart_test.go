package budget

import (
	"context"
	"errors"
	"sync"
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
	releases := servers.AcquireSlots(t, holder, 2)
	restart := killRedis(t)
	if _, err := other.Acquire(ctx); !errors.Is(err, pool.ErrBudgetExhausted) { // it sees Redis down
		t.Fatalf("Acquire with Redis down, none held = %v; want ErrBudgetExhausted", err)
	}
	restart()                                // empty: no persistence
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

// A slot given back while Redis is late (frozen: the call times out, and
// may have reached it) may be free in Redis for another process: it is not
// taken again until Redis answers. (One given back while Redis refuses
// connections is: its lease stays until the TTL.)
func TestASlotGivenBackWhileRedisIsLateIsNotTakenAgain(t *testing.T) {
	name := budgetName(t)
	b, _ := newBudget(t, name, 10, 3*time.Second)
	ctx := context.Background()
	slots := servers.AcquireSlots(t, b, 2)
	first, second := slots[0], slots[1]
	thaw := freezeRedis(t)
	second() // its ZREM times out: it may have been applied
	if r, err := b.Acquire(ctx); !errors.Is(err, pool.ErrBudgetExhausted) {
		if err == nil {
			r()
		}
		t.Fatalf("Acquire after a slot given back while Redis was late = %v; want ErrBudgetExhausted (the slot may be another's now)", err)
	}
	thaw()
	within, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	servers.WaitFor(t, within, "a slot once Redis answers", func() (bool, error) {
		r, err := b.Acquire(ctx)
		if errors.Is(err, pool.ErrBudgetExhausted) {
			return false, nil
		}
		if err == nil {
			r()
		}
		return err == nil, err
	})
	first()
}

// killRedis kills the suite's Redis and returns the func that starts it
// again, empty (run at the test's end if the test did not: for the next
// tests).
func killRedis(t *testing.T) (restart func()) {
	t.Helper()
	if err := rds.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restart = func() {
		once.Do(func() {
			if err := rds.Start(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restart)
	return restart
}

// freezeRedis stops the suite's Redis with SIGSTOP and returns the func
// that lets it run again (run at the test's end if the test did not).
func freezeRedis(t *testing.T) (thaw func()) {
	t.Helper()
	if err := rds.Freeze(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			if err := rds.Thaw(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(thaw)
	return thaw
}
