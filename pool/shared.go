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

// ErrBudgetExhausted is matched (errors.Is) by the error of a Budget's
// Acquire when every slot of the shared budget is taken.
var ErrBudgetExhausted = errors.New("pool: no slot free in the shared budget")

// budgetProbe is how long a pool whose Budget had no slot free holds its
// creations before it asks again (one creation, as back-pressure's probe).
const budgetProbe = 100 * time.Millisecond
