package respool

import (
	"testing"
	"time"

	"github.com/respool/respool/clock/clocktest"
)

// TestForReads: a DSN that asks for a server that may be read-only makes a
// Connector that a read-only server does not disturb.
func TestForReads(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u@a,b/db": false,
		"postgres://u@a,b/db?target_session_attrs=read-write":     false,
		"postgres://u@a,b/db?target_session_attrs=primary":        false,
		"postgres://u@a,b/db?target_session_attrs=read-only":      true,
		"postgres://u@a,b/db?target_session_attrs=standby":        true,
		"postgres://u@a,b/db?target_session_attrs=prefer-standby": true,
		"postgres://u@a,b/db?target_session_attrs=any":            true,
		"host=a,b user=u target_session_attrs = any":              true,
		"host=a user=u target_session_attrs=read-only":            true,
	} {
		if got := forReads(Config{DriverName: "pgx", DSN: dsn}); got != want {
			t.Errorf("forReads(%q) = %v, want %v", dsn, got, want)
		}
	}
	if forReads(Config{DriverName: "mysql", DSN: "u@tcp(a)/db"}) {
		t.Error("a mysql DSN is for reads")
	}
}

// TestReadOnlyGenerationMovesOnceAStay: the first refusal moves the
// generation (its connection is left); a refusal on a connection of the
// new generation within readOnlyStay moves nothing (the DSN still finds a
// read-only server: the connection is kept, nothing is dialed), one of an
// older generation is still left; after readOnlyStay the next refusal
// moves it again. Each move, and only a move, resets the pool.
func TestReadOnlyGenerationMovesOnceAStay(t *testing.T) {
	clk := clocktest.New(time.Unix(1_000_000, 0))
	resets := 0
	r := &serverRole{clock: clk, reset: func() { resets++ }}
	if r.settled(0) || !r.refused(0) || r.gen.Load() != 1 {
		t.Fatalf("first refusal: settled %v, generation %d; want it left, generation 1", r.settled(0), r.gen.Load())
	}
	clk.Advance(readOnlyStay - time.Millisecond)
	if !r.settled(1) || r.refused(1) || r.gen.Load() != 1 {
		t.Fatalf("a refusal on the new generation within the stay: settled %v, generation %d; want it kept, generation 1", r.settled(1), r.gen.Load())
	}
	if r.settled(0) || !r.refused(0) {
		t.Fatal("a refusal on the old generation: kept; want it left")
	}
	clk.Advance(time.Millisecond)
	if r.settled(1) || !r.refused(1) || r.gen.Load() != 2 {
		t.Fatalf("a refusal after the stay: settled %v, generation %d; want it left, generation 2", r.settled(1), r.gen.Load())
	}
	if resets != 2 {
		t.Fatalf("the pool was reset %d times for 2 moves", resets)
	}
	// The stay runs from the first connection made after the move when
	// dialing it took longer.
	clk.Advance(readOnlyStay)
	r.made(2)
	clk.Advance(readOnlyStay - time.Millisecond)
	r.made(2) // a later one changes nothing
	if !r.settled(2) {
		t.Error("a refusal within the stay after the first new connection: not settled")
	}
	clk.Advance(time.Millisecond)
	if r.settled(2) {
		t.Error("a refusal a stay after the first new connection: settled")
	}
}
