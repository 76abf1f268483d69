package faults

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

const (
	sampleEvery = 10 * time.Millisecond // sampled session counts
	drainBound  = 15 * time.Second      // for a server's sessions to end after a pool closed
)

// openAdmin opens a *sql.DB of one connection of s's AdminDSN, outside any
// pool under test, closed when the test ends. With keep false, the
// connection is closed after each use, so that it holds no session of a
// server's limit meanwhile.
func openAdmin(t *testing.T, s *servers.Server, keep bool) *sql.DB {
	t.Helper()
	db, err := sql.Open(s.DriverName(), s.AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if !keep {
		db.SetMaxIdleConns(0)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// waitDrained waits until the server holds no session of the test user but
// the admin's, after a pool under test closed, so that the next client
// starts on a quiet server.
func waitDrained(ctx context.Context, s *servers.Server, admin *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, drainBound)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		n, err := s.CountConnections(ctx, admin)
		if err == nil && n == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%s still holds %d sessions of the test user (%v) after %v", s.Kind, n, err, drainBound)
		}
	}
}

// countOpen returns how many sessions of the test database (PostgreSQL) or
// user (MariaDB) the server holds open, not counting admin's: on MariaDB,
// not those it has disconnected and is still tearing down (COMMAND
// 'Killed': it closed their socket, and counts them until it has rolled
// back and freed them; see TestServerCountsASessionItTearsDown). A
// PostgreSQL backend leaves pg_stat_activity before it closes its socket.
func countOpen(ctx context.Context, s *servers.Server, admin *sql.DB) (int, error) {
	if s.Kind != servers.KindMariaDB {
		return s.CountConnections(ctx, admin)
	}
	var n int
	err := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.processlist
		WHERE user = ? AND id <> CONNECTION_ID() AND command <> 'Killed'`, s.User).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count open mariadb sessions: %w", err)
	}
	return n, nil
}

// sampler samples the server's open sessions of the test user (countOpen)
// until stop.
type sampler struct {
	stop chan struct{}
	done chan struct{}
	peak int
	n    int // samples taken
}

func startSampler(s *servers.Server, admin *sql.DB) *sampler {
	sm := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(sm.done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(suiteCtx, time.Second)
			n, err := countOpen(ctx, s, admin)
			cancel()
			if err == nil {
				sm.peak, sm.n = max(sm.peak, n), sm.n+1
			}
			select {
			case <-tick.C:
			case <-sm.stop:
				return
			}
		}
	}()
	return sm
}

// finish stops the sampler and returns the peak and the number of samples.
func (sm *sampler) finish() (peak, samples int) {
	close(sm.stop)
	<-sm.done
	return sm.peak, sm.n
}

// pgLogMark is a position in a PostgreSQL server's log.
type pgLogMark struct {
	path   string
	offset int64
}

func markPgLog(s *servers.Server) (pgLogMark, error) {
	fi, err := os.Stat(s.LogPath())
	if err != nil {
		return pgLogMark{}, err
	}
	return pgLogMark{path: s.LogPath(), offset: fi.Size()}, nil
}

// pgEvent is a line of a PostgreSQL log about a session of the test
// database, or a connection refused for the session limit.
type pgEvent struct {
	at   time.Time
	pid  int
	kind pgEventKind
}

type pgEventKind int

const (
	pgAuthorized pgEventKind = iota // a session began
	pgEnded                         // a session ended
	pgTooMany                       // refused: max_connections reached
)

// pgLogLine matches the log_line_prefix servers.LogConnections sets
// ("%m [%p] ") and the messages of pgEventKind.
var pgLogLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+) \[(\d+)\] (?:` +
	`LOG:  connection authorized: user=\S+ database=(\S+)|` +
	`LOG:  disconnection: session time: \S+ user=\S+ database=(\S+)|` +
	`FATAL:  (sorry, too many clients already))`)

// events reads the events logged since m.
func (m pgLogMark) events(database string) ([]pgEvent, error) {
	f, err := os.Open(m.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(m.offset, io.SeekStart); err != nil {
		return nil, err
	}
	var evs []pgEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		g := pgLogLine.FindStringSubmatch(sc.Text())
		if g == nil {
			continue
		}
		at, err := time.Parse("2006-01-02 15:04:05.000 MST", g[1])
		if err != nil {
			return nil, fmt.Errorf("postgres log time %q: %w", g[1], err)
		}
		pid, _ := strconv.Atoi(g[2])
		e := pgEvent{at: at, pid: pid}
		switch {
		case g[3] != "":
			if g[3] != database {
				continue
			}
			e.kind = pgAuthorized
		case g[4] != "":
			if g[4] != database {
				continue
			}
			e.kind = pgEnded
		default:
			e.kind = pgTooMany
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}

// peakSessions returns the most sessions that began after the mark and
// were open at once, in the log's order.
func peakSessions(evs []pgEvent) int {
	open := map[int]bool{}
	peak := 0
	for _, e := range evs {
		switch e.kind {
		case pgAuthorized:
			open[e.pid] = true
			peak = max(peak, len(open))
		case pgEnded:
			delete(open, e.pid)
		}
	}
	return peak
}

// countTooMany counts the connections refused for the session limit in
// [from, to).
func countTooMany(evs []pgEvent, from, to time.Time) int {
	n := 0
	for _, e := range evs {
		if e.kind == pgTooMany && !e.at.Before(from) && e.at.Before(to) {
			n++
		}
	}
	return n
}

// mariadbStatus reads global status counters of a MariaDB server; names
// are constants of the suite.
func mariadbStatus(ctx context.Context, db *sql.DB, names ...string) (map[string]int64, error) {
	out := make(map[string]int64, len(names))
	for _, name := range names {
		var k string
		var v int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("mariadb status %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// holdSessions opens n sessions of the test user directly on s, as another
// application would, and keeps them until the test ends; the returned
// *sql.DB runs queries on one of them.
func holdSessions(t *testing.T, ctx context.Context, s *servers.Server, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open(s.DriverName(), s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	t.Cleanup(func() { _ = db.Close() })
	var conns []*sql.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatalf("another application's session: %v", err)
		}
		conns = append(conns, c)
	}
	// Give one back for queries; the other n-1 stay taken.
	if err := conns[0].Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range conns[1:] {
			_ = c.Close()
		}
	})
	return db
}
