package dbbudget

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Borrowing: a process at its share or beyond is refused a free slot while
// another below its share waits (without asking the database: the slot
// stays free for the needy one).
func TestABorrowerIsRefusedWhileANeedyProcessWaits(t *testing.T) {
	db := newFakeDB(4)
	a, c := fakeBudget(t, db, time.Second, false), fakeBudget(t, db, time.Second, false)
	ra := []func(){take(t, a), take(t, a), take(t, a)}
	take(t, c)
	b := fakeBudget(t, db, time.Second, false) // three members: a share of 1 each
	refused(t, b, "a full budget")
	ra[0]() // a free slot; a holds 2, over its share of 1
	eventually(t, "a sees b needy", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.view.needy && a.view.share == 1
	})
	takes := db.takeCount()
	if err := refused(t, a, "a borrower while a needy process waits"); !strings.Contains(err.Error(), "below its share waits") {
		t.Errorf("the refusal %q does not say why", err)
	}
	if db.takeCount() != takes {
		t.Error("the borrower's refusal asked the database")
	}
	take(t, b) // the slot left free
	if st := b.Stats(); st.Held != 1 || st.Share != 1 {
		t.Errorf("the needy process: %+v; want 1 held, its share 1", st)
	}
}

// A release that finds the session busy beyond Timeout (here a heartbeat
// whose census the database does not answer) does not wait longer: its
// slot stays locked, spare, and the next Acquire reuses it without asking
// the database. The locks the database shows are the slots held.
func TestAReleaseOnABusySessionKeepsItsLockSpare(t *testing.T) {
	const timeout = 200 * time.Millisecond
	db := newFakeDB(4)
	a := fakeBudget(t, db, timeout, true)
	r1, _ := take(t, a), take(t, a)
	eventually(t, "the first heartbeat's census", func() bool { return a.Stats().Members == 1 })
	gate := make(chan struct{})
	db.mu.Lock()
	db.gate = gate
	db.mu.Unlock()
	a.kick() // a heartbeat now, which waits at the gate holding the session
	eventually(t, "the heartbeat waiting for the database", func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.blocked > 0
	})
	began := time.Now()
	r1()
	if d := time.Since(began); d > 3*timeout {
		t.Errorf("a release on a busy session took %v; want about Timeout (%v)", d, timeout)
	}
	db.mu.Lock()
	db.gate = nil
	db.mu.Unlock()
	close(gate)
	takes := db.takeCount()
	take(t, a)
	if db.takeCount() != takes {
		t.Error("the Acquire after the busy session asked the database; want the spare lock reused")
	}
	if n, st := db.locksOf(a.sid(t)), a.Stats(); n != 2 || st.Held != 2 || st.StoreDown || st.Unregistered != 0 {
		t.Errorf("after the busy session: %+v, %d locks in the database; want 2 held, the session up, 2 locks", st, n)
	}
}

// A session lost: the process keeps within the slots held (one released
// can be taken again, no more, without the database), dials again, locks
// what is free, and a slot freed later goes to a connection opened while
// it was lost (the Acquire that found it is refused): the sum of the
// database's locks and the unregistered slots never exceeds Max for long.
func TestALostSessionKeepsWithinKnownAndRegistersAgain(t *testing.T) {
	db := newFakeDB(3)
	a, c := fakeBudget(t, db, time.Second, false), fakeBudget(t, db, time.Second, false)
	r1, _ := take(t, a), take(t, a)
	db.mu.Lock()
	db.refuseDials = true
	db.mu.Unlock()
	db.kill(a.sid(t))
	refused(t, a, "beyond the slots held, the session lost") // finds it lost
	if st := a.Stats(); !st.StoreDown || st.Held != 2 || st.Unregistered != 2 {
		t.Fatalf("session lost: %+v; want down, 2 held, both unregistered", st)
	}
	r1()
	takes := db.takeCount()
	take(t, a) // the one released: taken again alone
	refused(t, a, "beyond the slots held, the session lost")
	if db.takeCount() != takes {
		t.Error("an Acquire while the session is lost asked the database")
	}
	rc := []func(){take(t, c), take(t, c)} // the freed slots go to another process meanwhile
	db.mu.Lock()
	db.refuseDials = false
	db.mu.Unlock()
	eventually(t, "the session back", func() bool { return !a.Stats().StoreDown })
	if st := a.Stats(); st.Held != 2 || st.Unregistered != 1 {
		t.Fatalf("session back: %+v; want 2 held, 1 unregistered (the other took 2 of 3)", st)
	}
	refused(t, a, "a budget full, counting the unregistered slot")
	rc[0]()
	eventually(t, "the unregistered slot locked once one is free", func() bool { return a.Stats().Unregistered == 0 })
	refused(t, c, "a budget full again")
	if n := db.locksOf(a.sid(t)); n != 2 {
		t.Errorf("the database shows %d locks of the process; want 2", n)
	}
}

// Close ends the session (the database frees its locks) and the heartbeat;
// Acquire fails with errClosed after it; a release after it does nothing.
func TestCloseEndsTheSession(t *testing.T) {
	db := newFakeDB(2)
	a := fakeBudget(t, db, time.Second, false)
	r := take(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	r()
	if _, err := a.Acquire(context.Background()); err != errClosed {
		t.Errorf("Acquire after Close = %v; want errClosed", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.open) != 0 || len(db.slots) != 0 {
		t.Errorf("after Close the database holds %d sessions, %d locks; want none", len(db.open), len(db.slots))
	}
}
