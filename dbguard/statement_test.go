package dbguard_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
)

// TestStatementOutcomes checks what each statement outcome does to the
// breaker: which ones count as failures, which as successes, which not at
// all.
func TestStatementOutcomes(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	tests := []struct {
		name    string
		ctx     context.Context
		err     error
		opens   bool // four of them open a window of four
		records bool // counted in the window
	}{
		{"success", bg, nil, false, true},
		{"lost connection", bg, errLost, true, true},
		{"deadline", bg, context.DeadlineExceeded, true, true},
		{"syntax error", bg, errSyntax, false, true},
		{"caller's cancellation", bg, fmt.Errorf("query: %w", context.Canceled), false, false},
		{"lost after the caller cancelled", canceled, errLost, false, false},
		{"bad connection", bg, driver.ErrBadConn, false, false},
		{"skipped", bg, driver.ErrSkip, false, false},
		{"back-pressure", bg, errFull, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, dbguard.Config{Breaker: breaker.Config{WindowSize: 4, MinimumCalls: 4}})
			for range 4 {
				if rej := f.statement(tt.ctx, tt.err); rej != nil {
					t.Fatal(rej)
				}
			}
			s := f.g.Stats()
			if opened := s.Breaker.State == breaker.Open; opened != tt.opens {
				t.Fatalf("state %v; want open %v", s.Breaker.State, tt.opens)
			}
			if recorded := s.Breaker.Calls == 4 || s.Breaker.State == breaker.Open; recorded != tt.records {
				t.Fatalf("window calls %d; want recorded %v", s.Breaker.Calls, tt.records)
			}
			if want := map[bool]uint64{true: 4}[tt.opens]; s.StatementFailures != want {
				t.Fatalf("StatementFailures %d; want %d", s.StatementFailures, want)
			}
		})
	}
}

// TestOpenCircuitRejectsStatementsAndTakes checks that, once statements
// have opened the circuit, a take (Admit) and a statement (Enter) fail at
// once with a rejection matching breaker.ErrOpen that carries the
// half-open time; that the first statement after it is the probe, the
// others being rejected until it ends; and that connection attempts are
// rejected too.
func TestOpenCircuitRejectsStatementsAndTakes(t *testing.T) {
	f := newFixture(t, dbguard.Config{})
	f.statements(10, nil)
	f.statements(10, errLost)
	ctx := context.Background()
	halfOpen := f.clk.Now().Add(dbguard.BreakerPreset().OpenDelay.Initial)
	_, admitErr := f.g.Admit()
	for _, err := range []error{admitErr, f.statement(ctx, nil)} {
		var rej *resilience.RejectedError
		if !isRejection(err, breaker.ErrOpen) || !errors.As(err, &rej) || !rej.RetryAt.Equal(halfOpen) {
			t.Fatalf("while open: %v; want a rejection matching ErrOpen until %v", err, halfOpen)
		}
	}
	if _, err := f.connect(ctx); !isRejection(err, breaker.ErrOpen) || f.attempts() != 0 {
		t.Fatalf("connection attempt while open: %v (%d attempts)", err, f.attempts())
	}
	if s := f.g.Stats(); s.Rejected != 2 || s.Breaker.Rejected != 3 {
		t.Fatalf("Rejected %d (breaker %d); want 2 takes and statements, 3 in all", s.Rejected, s.Breaker.Rejected)
	}

	f.clk.Advance(halfOpen.Sub(f.clk.Now()))
	probe, err := f.g.Enter(ctx)
	if err != nil {
		t.Fatalf("the probe: %v", err)
	}
	if _, err := f.g.Admit(); !isRejection(err, breaker.ErrHalfOpenFull) {
		t.Fatalf("a take while the probe runs: %v; want ErrHalfOpenFull", err)
	}
	f.g.Exit(ctx, probe, errSyntax) // the server answered
	if err := f.statement(ctx, nil); err != nil {
		t.Fatalf("after the probe: %v; want the circuit closed", err)
	}
}

// TestBreakerOff checks that a Guard without a breaker admits everything
// and records nothing.
func TestBreakerOff(t *testing.T) {
	f := newFixture(t, dbguard.Config{BreakerDisabled: true})
	f.statements(100, errLost)
	done, err := f.g.Admit()
	if err != nil {
		t.Fatal(err)
	}
	done()
	if s := f.g.Stats(); s.BreakerOn || s.StatementFailures != 0 || f.g.Breaker() != nil {
		t.Fatalf("stats %+v", s)
	}
}

// TestHalfOpenAdmitsOneTake checks that, while the circuit is half-open
// and no probe has entered yet, Admit lets one take at a time into the
// pool, rejecting the others with ErrHalfOpenFull and a retry-after time:
// on a frozen server, the pool's slots are held by statements and
// sessions that do not end, so every take let in waits out its deadline;
// one take a time is the probe, the others fail fast. Once the take is
// done, the next one is admitted; with the circuit closed, all are.
func TestHalfOpenAdmitsOneTake(t *testing.T) {
	f := newFixture(t, dbguard.Config{})
	for range 3 {
		done, err := f.g.Admit()
		if err != nil {
			t.Fatalf("closed: %v", err)
		}
		defer done()
	}
	f.statements(10, nil)
	f.statements(10, errLost)
	f.clk.Advance(dbguard.BreakerPreset().OpenDelay.Initial)

	done, err := f.g.Admit()
	if err != nil {
		t.Fatalf("the first take while half-open: %v", err)
	}
	var rej *resilience.RejectedError
	_, err = f.g.Admit()
	if !isRejection(err, breaker.ErrHalfOpenFull) || !errors.As(err, &rej) || !rej.RetryAt.After(f.clk.Now()) {
		t.Fatalf("a second take while the first waits: %v; want ErrHalfOpenFull with a retry-after time", err)
	}
	done()
	done()
	done2, err := f.g.Admit()
	if err != nil {
		t.Fatalf("the next take once the first is done: %v", err)
	}
	if _, err := f.g.Admit(); !isRejection(err, breaker.ErrHalfOpenFull) {
		t.Fatalf("done twice freed two admissions: %v", err)
	}
	done2()
}

// TestDeadlineCountsWhenTheStatementRanLong checks that a statement ended
// by its deadline counts as a failure only when it ran at least twice as
// long as the statements the server answered: on a frozen server the
// statements under way run until their deadline and open the circuit; on a
// slow but healthy one a statement whose caller had less time left than
// the server takes says nothing against the server.
func TestDeadlineCountsWhenTheStatementRanLong(t *testing.T) {
	ctx := context.Background()
	for _, frozen := range []bool{true, false} {
		t.Run(map[bool]string{true: "frozen", false: "slow"}[frozen], func(t *testing.T) {
			f := newFixture(t, dbguard.Config{Breaker: breaker.Config{WindowSize: 4, MinimumCalls: 4}})
			p, err := f.g.Enter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(200 * time.Millisecond)
			f.g.Exit(ctx, p, nil) // the server answers in 200ms
			var ps []resilience.Permit
			for range 4 {
				p, err := f.g.Enter(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
			run := 150 * time.Millisecond
			if frozen {
				run = time.Second
			}
			f.clk.Advance(run)
			for _, p := range ps {
				f.g.Exit(ctx, p, context.DeadlineExceeded)
			}
			s := f.g.Stats()
			if opened := s.Breaker.State == breaker.Open; opened != frozen {
				t.Fatalf("state %v (%d statement failures); want open %v", s.Breaker.State, s.StatementFailures, frozen)
			}
		})
	}
}
