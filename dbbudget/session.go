package dbbudget

import (
	"context"
	"hash/fnv"
	"strconv"
)

// session is one coordinating session: a connection of the Budget's own
// holding its locks. It is used by one goroutine at a time (the holder of
// Budget.tok); a method that fails leaves it unusable (the Budget closes
// it and dials another).
type session interface {
	// id is the session's id at the server: PostgreSQL's backend PID,
	// MySQL's connection id.
	id() int64
	// take locks up to n free slots, none of not (the slots this session
	// holds already: the locks are reentrant), trying from slot first on,
	// and returns those it locked.
	take(ctx context.Context, not []int, n, first int) ([]int, error)
	// give unlocks the slots.
	give(ctx context.Context, slots []int) error
	// want takes (on) or gives back the want lock; taking it wakes the
	// other members up (PostgreSQL's NOTIFY).
	want(ctx context.Context, on bool) error
	// census returns the holdings of every process of the budget.
	census(ctx context.Context) ([]holding, error)
	// wait returns when a notification comes or ctx ends (nil then); at
	// once for an engine without notifications.
	wait(ctx context.Context) error
	// close ends the session: the server frees its locks.
	close()
}

// dialer opens coordinating sessions: PostgreSQL's or MySQL's.
type dialer interface {
	// dial opens a session and takes its member lock; notify is called
	// when another member starts wanting (it must not block).
	dial(ctx context.Context, notify func()) (session, error)
	// engine names the database for errors and logs.
	engine() string
}

// keys are the budget's lock spaces, derived from its Name.
type keys struct {
	slot, member, want int32  // PostgreSQL: the first key of each space (31 bits)
	channel            string // PostgreSQL: the LISTEN/NOTIFY channel of the fair share
	signals            string // PostgreSQL: the channel of Share's signals
	prefix             string // MySQL: the prefix of the lock names
}

// keysOf derives the lock spaces of the budget name (see the package
// documentation: collisions).
func keysOf(name string) keys {
	h32 := func(space string) int32 {
		h := fnv.New32a()
		_, _ = h.Write([]byte("respool budget\x00" + name + "\x00" + space))
		return int32(h.Sum32() & 0x7fffffff)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("respool budget\x00" + name))
	hex := strconv.FormatUint(h.Sum64(), 16)
	return keys{slot: h32("slot"), member: h32("member"), want: h32("want"),
		channel: "respool_budget_" + hex, signals: "respool_signal_" + hex, prefix: "respool:" + hex + ":"}
}
