package dbbudget

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/pool"
)

// fakeDB is a database of locks in memory, with fault injection, for the
// Budget's own logic: the sessions it dials (fakeSession) lock slots,
// member and want locks as PostgreSQL's and MySQL's do; a session that
// ends frees its locks.
type fakeDB struct {
	max int

	mu          sync.Mutex
	nextID      int64
	slots       map[int]int64 // slot → holder
	wants       map[int64]bool
	open        map[int64]*fakeSession
	refuseDials bool
	gate        chan struct{} // non-nil: every call waits for it to close (a session that does not answer)
	blocked     int           // calls waiting at the gate
	takes       int           // take calls answered
}

func newFakeDB(max int) *fakeDB {
	return &fakeDB{max: max, slots: map[int]int64{}, wants: map[int64]bool{}, open: map[int64]*fakeSession{}}
}

func (db *fakeDB) engine() string { return "fakeDB" }

func (db *fakeDB) dial(_ context.Context, notify func()) (session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.refuseDials {
		return nil, errors.New("fakeDB: connection refused")
	}
	db.nextID++
	s := &fakeSession{db: db, sid: db.nextID, notify: notify}
	db.open[s.sid] = s
	return s, nil
}

// kill ends session sid as the server would (its locks freed; its next
// call fails).
func (db *fakeDB) kill(sid int64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if s := db.open[sid]; s != nil {
		s.dead = true
	}
	db.endLocked(sid)
}

func (db *fakeDB) endLocked(sid int64) {
	for i, h := range db.slots {
		if h == sid {
			delete(db.slots, i)
		}
	}
	delete(db.wants, sid)
	delete(db.open, sid)
}

// takeCount is how many take calls the database answered.
func (db *fakeDB) takeCount() int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.takes
}

// locksOf counts the slot locks session sid holds.
func (db *fakeDB) locksOf(sid int64) int {
	db.mu.Lock()
	defer db.mu.Unlock()
	n := 0
	for _, h := range db.slots {
		if h == sid {
			n++
		}
	}
	return n
}

type fakeSession struct {
	db     *fakeDB
	sid    int64
	notify func()
	dead   bool // guarded by db.mu
}

// call passes the gate, if any, within ctx, and fails for a dead session.
func (s *fakeSession) call(ctx context.Context) error {
	s.db.mu.Lock()
	gate := s.db.gate
	s.db.blocked++
	s.db.mu.Unlock()
	var err error
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	s.db.mu.Lock()
	s.db.blocked--
	if err == nil && s.dead {
		err = errors.New("fakeDB: the session was ended")
	}
	if err == nil && s.db.open[s.sid] == nil {
		err = errors.New("fakeDB: the session is closed")
	}
	s.db.mu.Unlock()
	return err
}

func (s *fakeSession) id() int64 { return s.sid }

func (s *fakeSession) take(ctx context.Context, not []int, n, first int) ([]int, error) {
	if err := s.call(ctx); err != nil {
		return nil, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.takes++
	var got []int
	for k := range s.db.max {
		i := (first + k) % s.db.max
		if len(got) == n {
			break
		}
		held := false
		for _, j := range not {
			held = held || j == i
		}
		if held {
			continue
		}
		if h, ok := s.db.slots[i]; ok && h != s.sid {
			continue
		} else if ok {
			panic("fakeDB: a session locked a slot it holds, not told it holds it (reentrant: it would need two unlocks)")
		}
		s.db.slots[i] = s.sid
		got = append(got, i)
	}
	return got, nil
}

func (s *fakeSession) give(ctx context.Context, slots []int) error {
	if err := s.call(ctx); err != nil {
		return err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	for _, i := range slots {
		if s.db.slots[i] == s.sid {
			delete(s.db.slots, i)
		}
	}
	return nil
}

func (s *fakeSession) want(ctx context.Context, on bool) error {
	if err := s.call(ctx); err != nil {
		return err
	}
	s.db.mu.Lock()
	s.db.wants[s.sid] = on
	var others []func()
	for id, o := range s.db.open {
		if id != s.sid && on {
			others = append(others, o.notify)
		}
	}
	s.db.mu.Unlock()
	for _, notify := range others {
		notify()
	}
	return nil
}

func (s *fakeSession) census(ctx context.Context) ([]holding, error) {
	if err := s.call(ctx); err != nil {
		return nil, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	var rows []holding
	for id := range s.db.open {
		h := holding{id: id, member: true, wants: s.db.wants[id]}
		for _, holder := range s.db.slots {
			if holder == id {
				h.held++
			}
		}
		rows = append(rows, h)
	}
	return rows, nil
}

func (s *fakeSession) wait(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (s *fakeSession) close() {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.endLocked(s.sid)
}

// fakeBudget is a Budget of max slots on db, closed when the test ends;
// its heartbeat comes every 250ms, or with quiet only at its start and
// when kicked (the test alone uses its session).
func fakeBudget(t *testing.T, db *fakeDB, timeout time.Duration, quiet bool) *Budget {
	t.Helper()
	every := heartbeat
	if quiet {
		every = time.Hour
	}
	b, err := start(context.Background(), Config{Name: "fake", Max: db.max, Timeout: timeout,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, db, nil, every)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// sid is the id of b's session.
func (b *Budget) sid(t *testing.T) int64 {
	t.Helper()
	if got, _ := b.lockSession(context.Background(), 5*time.Second); !got {
		t.Fatal("the session's token was not given back within 5s")
	}
	defer b.unlockSession()
	if b.sess == nil {
		t.Fatal("no session")
	}
	return b.sess.id()
}

// eventually polls cond every millisecond until it holds, failing the test
// after 5s: for a state a heartbeat (every 250ms) reaches on its own.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func take(t *testing.T, b *Budget) func() {
	t.Helper()
	r, err := b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func refused(t *testing.T, b *Budget, what string) error {
	t.Helper()
	_, err := b.Acquire(context.Background())
	if !errors.Is(err, pool.ErrBudgetExhausted) {
		t.Fatalf("%s: Acquire = %v; want ErrBudgetExhausted", what, err)
	}
	return err
}
