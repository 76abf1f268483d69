package multiproc

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// sampleEvery is how often the sampler counts the sessions at the server.
const sampleEvery = 20 * time.Millisecond

// sample is one count of the workers' sessions at the server.
type sample struct {
	at    time.Time // when the server answered
	total int
	by    []int // by worker index
}

func (s sample) String() string { return fmt.Sprintf("%d %v", s.total, s.by) }

// min is the fewest sessions of any worker.
func (s sample) min() int {
	m := s.total
	for _, n := range s.by {
		m = min(m, n)
	}
	return m
}

// sampler counts the sessions of a fleet's workers at the server every
// sampleEvery, on a connection of its own that it does not count
// (PostgreSQL: database postgres; MariaDB: root).
type sampler struct {
	t       *testing.T
	srv     *servers.Server
	db      *sql.DB // one administrator's connection
	workers int
	began   time.Time
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	samples []sample      // guarded by mu
	next    chan struct{} // closed at the next sample; guarded by mu
	err     error         // the first failed count; guarded by mu
	events  []event       // guarded by mu
}

func startSampler(t *testing.T, ctx context.Context, srv *servers.Server, workers int) *sampler {
	t.Helper()
	dsn := srv.AdminDSN()
	if srv.Kind == servers.KindPostgres {
		dsn = as(srv, srv.User, srv.Password, "postgres").PgxDSN()
	}
	s := &sampler{t: t, srv: srv, db: servers.OpenDB(t, srv.DriverName(), dsn), workers: workers,
		began: time.Now(), done: make(chan struct{}), next: make(chan struct{})}
	s.db.SetMaxOpenConns(sessionsOfTheParent)
	if err := s.db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	run, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.loop(run)
	t.Cleanup(s.stop)
	return s
}

// sessionsOfTheParent is how many sessions the parent holds at a MariaDB
// server while a fleet runs: the sampler's.
const sessionsOfTheParent = 1

func (s *sampler) loop(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		smp, err := s.count(ctx)
		s.mu.Lock()
		if err == nil {
			s.samples = append(s.samples, smp)
			close(s.next)
			s.next = make(chan struct{})
		} else if s.err == nil && ctx.Err() == nil {
			s.err = err
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// count counts the sessions of each worker: PostgreSQL's by
// application_name, MariaDB's by user.
func (s *sampler) count(ctx context.Context) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a query may be slow on a busy machine
	defer cancel()
	q := `SELECT application_name, count(*) FROM pg_stat_activity
		WHERE datname = $1 AND backend_type = 'client backend' GROUP BY 1`
	arg := s.srv.Database
	if s.srv.Kind == servers.KindMariaDB {
		q = `SELECT user, COUNT(*) FROM information_schema.processlist WHERE user LIKE ? GROUP BY user`
		arg = mariaUserPrefix + "%"
	}
	rows, err := s.db.QueryContext(ctx, q, arg)
	if err != nil {
		return sample{}, err
	}
	defer rows.Close()
	smp := sample{by: make([]int, s.workers)}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return sample{}, err
		}
		smp.total += n
		if i, ok := workerIndex(name); ok && i < s.workers {
			smp.by[i] += n
		}
	}
	smp.at = time.Now()
	return smp, rows.Err()
}

// workerIndex is the worker whose application_name or MariaDB user name is.
func workerIndex(name string) (int, bool) {
	for _, prefix := range []string{appPrefix, mariaUserPrefix} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			i, err := strconv.Atoi(rest)
			return i, err == nil
		}
	}
	return 0, false
}

// first returns the first sample taken after from that satisfies cond,
// waiting until deadline: how long after from it was taken, and the last
// sample seen.
func (s *sampler) first(from, deadline time.Time, cond func(sample) bool) (took time.Duration, last sample, ok bool) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	seen := 0
	for {
		s.mu.Lock()
		samples, next := s.samples[seen:], s.next
		seen = len(s.samples)
		s.mu.Unlock()
		for _, smp := range samples {
			if smp.at.Before(from) {
				continue
			}
			last = smp
			if cond(smp) {
				return smp.at.Sub(from), smp, true
			}
		}
		select {
		case <-next:
		case <-timer.C:
			return 0, last, false
		}
	}
}

// maxBetween returns the sample with the most sessions of those taken
// from from to to.
func (s *sampler) maxBetween(from, to time.Time) sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m sample
	for _, smp := range s.samples {
		if !smp.at.Before(from) && !smp.at.After(to) && smp.total > m.total {
			m = smp
		}
	}
	return m
}

// overBudget returns the sample with the most sessions of those taken
// from from to to, and whether two samples in a row held more than the
// budget.
func (s *sampler) overBudget(from, to time.Time) (m sample, lasting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prevOver := false
	for _, smp := range s.samples {
		if smp.at.Before(from) || smp.at.After(to) {
			continue
		}
		if smp.total > m.total {
			m = smp
		}
		over := smp.total > budgetMax
		lasting = lasting || over && prevOver
		prevOver = over
	}
	return m, lasting
}

// maxOf returns the most sessions of worker i in a sample taken from from
// to to.
func (s *sampler) maxOf(i int, from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, smp := range s.samples {
		if !smp.at.Before(from) && !smp.at.After(to) {
			n = max(n, smp.by[i])
		}
	}
	return n
}

// stop ends the sampling (once) and fails the test if a count failed.
func (s *sampler) stop() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		s.t.Errorf("sampler: %v", s.err)
		s.err = nil
	}
}

// dump formats the samples, one a line, for a failed test's log; when
// there are many, those that changed.
func (s *sampler) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	prev, events := "", s.events
	for _, smp := range s.samples {
		for len(events) > 0 && !events[0].at.After(smp.at) {
			fmt.Fprintf(&b, "%6d: -- %s\n", events[0].at.Sub(s.began).Milliseconds(), events[0].what)
			events = events[1:]
		}
		line := smp.String()
		if line != prev {
			fmt.Fprintf(&b, "%6d: %s\n", smp.at.Sub(s.began).Milliseconds(), line)
		}
		prev = line
	}
	return b.String()
}

// event notes what the parent did, for dump.
func (s *sampler) event(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event{time.Now(), what})
}

type event struct {
	at   time.Time
	what string
}

// counters are the server's own counts of connections.
type counters struct {
	opened  int // sessions the server opened (PostgreSQL: its log; MariaDB: Connections); -1 unknown
	refused int // attempts it refused beyond max_connections; -1 unknown
	maxUsed int // MariaDB's Max_used_connections since FLUSH STATUS; 0 on PostgreSQL
}

// counters reads the server's counters: PostgreSQL's log of connections,
// MariaDB's status (its Max_used_connections flushed at a fleet's start).
func (f *fleet) counters(ctx context.Context) counters {
	f.t.Helper()
	if f.srv.Kind == servers.KindPostgres {
		log, err := os.ReadFile(f.srv.LogPath())
		if err != nil {
			return counters{opened: -1, refused: -1}
		}
		return counters{opened: strings.Count(string(log), "connection authorized"),
			refused: strings.Count(string(log), "sorry, too many clients already")}
	}
	if f.began == (counters{}) { // the fleet's start: Max_used_connections from now on
		if _, err := f.smp.db.ExecContext(ctx, "FLUSH STATUS"); err != nil {
			f.t.Fatal(err)
		}
	}
	var c counters
	rows, err := f.smp.db.QueryContext(ctx, `SHOW GLOBAL STATUS WHERE Variable_name IN
		('Connections', 'Connection_errors_max_connections', 'Max_used_connections')`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			f.t.Fatal(err)
		}
		switch name {
		case "Connections":
			c.opened = n
		case "Connection_errors_max_connections":
			c.refused = n
		case "Max_used_connections":
			c.maxUsed = n
		}
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return c
}

// minus is c counted since the earlier counters e.
func (c counters) minus(e counters) counters {
	if c.opened < 0 || e.opened < 0 {
		return counters{opened: -1, refused: -1}
	}
	return counters{opened: c.opened - e.opened, refused: c.refused - e.refused, maxUsed: c.maxUsed}
}
