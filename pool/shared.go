package pool

import (
	"context"
	"errors"
	"time"
)

// Budget is a budget of objects a pool shares with pools beyond it: those
// of other processes on the same database, through a store they all reach
// (Redis, or the database itself). A pool with one (Config.Budget) takes a
// slot before each creation and gives it back once the object is
// destroyed; a take of an idle object does not ask it.
//
// Acquire takes one slot, within ctx (the creation's: its caller's values,
// bounded by CreateTimeout), and returns the func that gives it back,
// which the pool calls once. It returns an error matching
// ErrBudgetExhausted when no slot is free anywhere: the pool then makes
// nothing and holds at the objects it has, none included, as under
// back-pressure (its callers wait for objects given back, or for the next
// probe; it asks again every 100ms; it is not counted as a creation
// failure). Any
// other error fails the creation as a factory's error would. An Acquire
// whose store does not answer must not hold the creation long: a Budget
// decides locally then (see module github.com/respool/respool/redisbudget).
type Budget interface {
	Acquire(ctx context.Context) (release func(), err error)
}

// Reclaimer is a Budget that may ask its pools for slots back, so that
// another process sharing it can have its share: New calls Attach once
// with the pool's reclaim func, and Close calls the detach func it
// returned (reclaim does nothing after it).
//
// reclaim(n, inUse) asks the pool to destroy up to n of its objects,
// keeping at least its MinIdle alive: its idle objects at once, oldest
// first, and, with inUse, the next objects given back too (instead of
// serving the pool's own waiting callers), until n are destroyed. Each
// call replaces the one before: reclaim(0, false) ends it. Their slots go
// back through their release funcs; they are counted in
// Stats.Destroys.Yielded. reclaim does not wait for the objects to be
// destroyed, and may be called from any goroutine.
type Reclaimer interface {
	Budget
	Attach(reclaim func(n int, inUse bool)) (detach func())
}

// BudgetStats is what a Budget says of itself when it has a method
// Stats() BudgetStats (the stores of modules redisbudget and dbbudget do):
// Stats.Budget then holds it.
type BudgetStats struct {
	Held         int    // slots this process holds (its objects, and those being created)
	Share        int    // the slots guaranteed to this process: the budget / Members (rounded down), as the store last said
	Members      int    // the processes sharing the budget, this one included, as the store last said
	Borrowed     int    // slots held beyond Share: other processes' unused shares
	Reclaiming   int    // slots the pools were last asked to give back (Reclaimer) for a process that wants one
	Unregistered int    // of Held, the slots the store does not hold: taken while it did not answer, or lost
	StoreDown    bool   // the last call to the store failed: the process keeps within the slots it held
	Refused      uint64 // Acquires refused: no slot free (or, while the store is down, none held before)
	StoreErrors  uint64 // calls to the store that failed
}

// budgetStats returns b's BudgetStats, or nil if it has none.
func budgetStats(b Budget) *BudgetStats {
	r, ok := b.(interface{ Stats() BudgetStats })
	if !ok {
		return nil
	}
	s := r.Stats()
	return &s
}

// ErrBudgetExhausted is matched (errors.Is) by the error of a Budget's
// Acquire when every slot of the shared budget is taken.
var ErrBudgetExhausted = errors.New("pool: no slot free in the shared budget")

// budgetProbe is how long a pool whose Budget had no slot free holds its
// creations before it asks again (one creation, as back-pressure's probe).
const budgetProbe = 100 * time.Millisecond
