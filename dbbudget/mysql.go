package dbbudget

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// myDialer opens MySQL/MariaDB coordinating sessions.
type myDialer struct {
	cfg  *mysql.Config
	keys keys
	max  int
}

func (d *myDialer) engine() string { return "MySQL" }

func (d *myDialer) dial(ctx context.Context, _ func()) (session, error) {
	connector, err := mysql.NewConnector(d.cfg.Clone())
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &mySession{db: db, conn: conn, keys: d.keys, max: d.max, member: -1}
	if err := s.begin(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// mySession is a MySQL/MariaDB coordinating session: slot i is the user
// lock prefix+"s"+i, the member lock prefix+"m"+j for the first j free in
// [0, max], the want lock prefix+"w"+j. MySQL has no table of user locks
// that every user may read, so a census asks IS_USED_LOCK of each name.
type mySession struct {
	db     *sql.DB
	conn   *sql.Conn
	keys   keys
	max    int
	connID int64
	member int // j of the member lock; -1: none free (more than max+1 members: not counted)
}

// begin takes the first member lock free.
func (s *mySession) begin(ctx context.Context) error {
	if err := s.conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.connID); err != nil {
		return err
	}
	got, err := s.lock(ctx, "m", s.max+1, nil, 1, 0)
	if len(got) == 1 {
		s.member = got[0]
	}
	return err
}

func (s *mySession) id() int64 { return s.connID }

// series returns SQL for a derived table of the integers [0, n) as column
// r: digits crossed (MySQL 5.7 has no recursive CTE, and MySQL 8 bounds
// their depth).
func series(n int) string {
	digits := len(strconv.Itoa(max(n-1, 0)))
	var from, sum []string
	for d := range digits {
		from = append(from, fmt.Sprintf("(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 "+
			"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) AS d%d", d))
		sum = append(sum, fmt.Sprintf("d%d.d*%d", d, pow10(d)))
	}
	return "(SELECT " + strings.Join(sum, "+") + " AS r FROM " + strings.Join(from, ", ") + ")"
}

func pow10(d int) int {
	p := 1
	for range d {
		p *= 10
	}
	return p
}

// lock takes up to n free locks of kind among [0, size), none of not
// (GET_LOCK is reentrant), trying from first on, in one statement of
// integers and hex only (no placeholder: one round trip, no prepared
// statement). The CASE keeps GET_LOCK from being called on a name held or
// beyond size; LIMIT stops at n taken.
func (s *mySession) lock(ctx context.Context, kind string, size int, not []int, n, first int) ([]int, error) {
	notIn := "-1"
	for _, i := range not {
		notIn += "," + strconv.Itoa(i)
	}
	q := fmt.Sprintf("SELECT i FROM (SELECT r, (r + %d) %% %d AS i FROM %s AS r0) AS t "+
		"WHERE CASE WHEN r >= %d OR i IN (%s) THEN 0 ELSE GET_LOCK(CONCAT('%s%s', i), 0) END = 1 LIMIT %d",
		first, size, series(size), size, notIn, s.keys.prefix, kind, n)
	rows, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return got, err
		}
		got = append(got, i)
	}
	return got, rows.Err()
}

func (s *mySession) take(ctx context.Context, not []int, n, first int) ([]int, error) {
	return s.lock(ctx, "s", s.max, not, n, first)
}

func (s *mySession) give(ctx context.Context, slots []int) error {
	calls := make([]string, len(slots))
	for k, i := range slots {
		calls[k] = fmt.Sprintf("RELEASE_LOCK('%ss%d')", s.keys.prefix, i)
	}
	_, err := s.conn.ExecContext(ctx, "DO "+strings.Join(calls, ", "))
	return err
}

func (s *mySession) want(ctx context.Context, on bool) error {
	if s.member < 0 {
		return nil // not a member: not counted, wanting or not
	}
	f := "GET_LOCK('%sw%d', 0)"
	if !on {
		f = "RELEASE_LOCK('%sw%d')"
	}
	_, err := s.conn.ExecContext(ctx, "DO "+fmt.Sprintf(f, s.keys.prefix, s.member))
	return err
}

func (s *mySession) census(ctx context.Context) ([]holding, error) {
	q := fmt.Sprintf("SELECT r, IF(r < %d, IS_USED_LOCK(CONCAT('%ss', r)), NULL), IS_USED_LOCK(CONCAT('%sm', r)), IS_USED_LOCK(CONCAT('%sw', r)) "+
		"FROM %s AS r0 WHERE r <= %d", s.max, s.keys.prefix, s.keys.prefix, s.keys.prefix, series(s.max+1), s.max)
	rows, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	by := map[int64]*holding{}
	of := func(id int64) *holding {
		h := by[id]
		if h == nil {
			h = &holding{id: id}
			by[id] = h
		}
		return h
	}
	for rows.Next() {
		var r int
		var slot, member, want sql.NullInt64
		if err := rows.Scan(&r, &slot, &member, &want); err != nil {
			return nil, err
		}
		if slot.Valid {
			of(slot.Int64).held++
		}
		if member.Valid {
			of(member.Int64).member = true
		}
		if want.Valid {
			of(want.Int64).wants = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]holding, 0, len(by))
	for _, h := range by {
		out = append(out, *h)
	}
	return out, nil
}

// wait holds the session until ctx ends: MySQL has no notifications (the
// heartbeat polls).
func (s *mySession) wait(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (s *mySession) close() {
	_ = s.conn.Close()
	_ = s.db.Close()
}

// quietMySQL is go-sql-driver/mysql's Logger for the coordinating session:
// it prints nothing.
type quietMySQL struct{}

func (quietMySQL) Print(...any) {}
