package dbbudget

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgDialer opens PostgreSQL coordinating sessions.
type pgDialer struct {
	cc   *pgx.ConnConfig
	keys keys
	max  int
}

func (d *pgDialer) engine() string { return "PostgreSQL" }

// ErrPooler is matched (errors.Is) by New's error when the DSN reaches
// PostgreSQL through a connection pooler (PgBouncer, pgcat, Supavisor…),
// where a session's advisory locks are not tied to the client's session.
var ErrPooler = errors.New("dbbudget: the DSN reaches a connection pooler, not the database")

func (d *pgDialer) dial(ctx context.Context, notify func()) (session, error) {
	cc := d.cc.Copy()
	cc.OnNotification = func(*pgconn.PgConn, *pgconn.Notification) { notify() }
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	s := &pgSession{conn: conn, keys: d.keys, max: d.max}
	if err := s.begin(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// pgSession is a PostgreSQL coordinating session: slot i is the advisory
// lock (keys.slot, i), the member lock (keys.member, pid), the want lock
// (keys.want, pid), all session-level.
type pgSession struct {
	conn *pgx.Conn
	keys keys
	max  int
	pid  int64
}

// begin checks that the session is the server's own (not a pooler's),
// takes the member lock and listens on the budget's channel.
func (s *pgSession) begin(ctx context.Context) error {
	given := s.conn.PgConn().PID()
	if err := s.conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&s.pid); err != nil {
		return err
	}
	if int64(given) != s.pid {
		return fmt.Errorf("%w: the server's backend PID is %d but the connection was given PID %d, as PgBouncer and other poolers invent: "+
			"a session-level advisory lock taken through a pooler in transaction or statement mode stays on a server session other clients get, "+
			"and is not freed when this process dies; give the budget a DSN of the database itself (its pools may still go through the pooler)",
			ErrPooler, s.pid, given)
	}
	_, err := s.conn.Exec(ctx, fmt.Sprintf("SELECT pg_advisory_lock(%d, pg_backend_pid()); LISTEN %s",
		s.keys.member, pgx.Identifier{s.keys.channel}.Sanitize()))
	return err
}

func (s *pgSession) id() int64 { return s.pid }

// pgTake tries the slots from $2 on, round, skipping those held ($4): the
// CASE keeps pg_try_advisory_lock from being called on a slot held (it
// would be locked twice), LIMIT stops at $5 taken.
const pgTake = `SELECT i FROM (SELECT (s + $2::int4) % $3::int4 AS i FROM generate_series(0, $3::int4 - 1) AS s) AS t
WHERE CASE WHEN i = ANY($4::int4[]) THEN false ELSE pg_try_advisory_lock($1::int4, i) END LIMIT $5`

func (s *pgSession) take(ctx context.Context, not []int, n, first int) ([]int, error) {
	rows, err := s.conn.Query(ctx, pgTake, s.keys.slot, first, s.max, not, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

func (s *pgSession) give(ctx context.Context, slots []int) error {
	_, err := s.conn.Exec(ctx, "SELECT pg_advisory_unlock($1::int4, i) FROM unnest($2::int4[]) AS i", s.keys.slot, slots)
	return err
}

func (s *pgSession) want(ctx context.Context, on bool) error {
	if !on {
		_, err := s.conn.Exec(ctx, "SELECT pg_advisory_unlock($1::int4, pg_backend_pid())", s.keys.want)
		return err
	}
	_, err := s.conn.Exec(ctx, "SELECT pg_try_advisory_lock($1::int4, pg_backend_pid()), pg_notify($2, '')", s.keys.want, s.keys.channel)
	return err
}

// pgCensus reads, from pg_locks (readable by every role), the budget's
// locks in this database by session.
const pgCensus = `SELECT pid, count(*) FILTER (WHERE classid::int8 = $1), bool_or(classid::int8 = $2), bool_or(classid::int8 = $3)
FROM pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid::int8 IN ($1, $2, $3)
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
GROUP BY pid`

func (s *pgSession) census(ctx context.Context) ([]holding, error) {
	rows, err := s.conn.Query(ctx, pgCensus, int64(s.keys.slot), int64(s.keys.member), int64(s.keys.want))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (h holding, err error) {
		var pid int32
		err = r.Scan(&pid, &h.held, &h.member, &h.wants)
		h.id = int64(pid)
		return h, err
	})
}

func (s *pgSession) wait(ctx context.Context) error {
	err := s.conn.PgConn().WaitForNotification(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *pgSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeBound)
	defer cancel()
	_ = s.conn.Close(ctx)
}
