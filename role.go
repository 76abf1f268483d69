package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/dbguard"
)

// serverRole is what a Connector for writes knows of its server's role. A
// write the server refused as read-only (dbguard.ClassReadOnly; or
// go-sql-driver/mysql's driver.ErrBadConn under rejectReadOnly=true) on a
// connection of the current generation, when the server takes no writes
// from any session (see conn.serverReadOnly), means that every connection
// made so far goes to a server that takes no writes: the generation moves
// on and the pool is Reset (pool.Pool.Reset), so that every idle connection
// is closed at once, every one in use when it is given back (the refused
// one among them) and every one being made when it arrives; none is
// handed out again. New connections are dialed from the DSN again: with
// several hosts and target_session_attrs=read-write, pgx finds the
// writable one. The generation keeps a refusal on a connection made before
// the last Reset (one in use then) from resetting the pool again, which
// would close the new connections to the writable server.
//
// The generation moves at most once a readOnlyStay: a connection made
// since the last move that is refused too goes to a server the DSN still
// finds read-only (one host, or several without target_session_attrs),
// where a new one would be refused as well: it is kept, its caller gets
// the refusal as the plain driver gives it, and nothing is dialed, until
// readOnlyStay has passed since the move, or since the first connection
// made after it when that came later (settled). A server read-only for
// long thus costs at most one pool's worth of new connections a
// readOnlyStay, not one a refused write.
//
// A Connector whose DSN asks for reads (see forReads) has none: a
// read-only server is what it wants.
type serverRole struct {
	gen   atomic.Uint64 // the current generation
	moved atomic.Int64  // when it last moved (or its first connection was made), in clock's UnixNano; 0: never
	fresh atomic.Bool   // it moved, and no connection was made since
	clock clock.Clock
	reset func() // the Connector's pool's Reset
	// connector makes the connection that asks the server its state when
	// the refused one is gone (rejectReadOnly: the driver closed it).
	connector driver.Connector
	checking  atomic.Bool // such a connection is under way
}

// readOnlyStay is the least time between two moves of the generation.
const readOnlyStay = time.Second

// refused notes a refusal as read-only, by a server that takes no writes
// from any session, on a connection of generation gen, resets the pool
// when the generation moves, and reports whether that connection is to be
// left (closed, its write run elsewhere): yes for a connection of an older
// generation (left already) and for one of the current generation when
// the generation moves; no when it is settled.
func (r *serverRole) refused(gen uint64) bool {
	if r.settled(gen) {
		return false
	}
	if r.gen.CompareAndSwap(gen, gen+1) {
		r.moved.Store(r.clock.Now().UnixNano())
		r.fresh.Store(true)
		r.reset()
	}
	return true
}

// made notes a connection made in generation gen: the first one made
// after a move starts readOnlyStay again, so that the time the pool took
// to dial does not count.
func (r *serverRole) made(gen uint64) {
	if gen == r.gen.Load() && r.fresh.CompareAndSwap(true, false) {
		r.moved.Store(r.clock.Now().UnixNano())
	}
}

// settled reports whether a refusal on a connection of generation gen
// moves nothing: gen is the current generation, which a refusal began
// less than readOnlyStay ago. The server need not be asked then.
func (r *serverRole) settled(gen uint64) bool {
	last := r.moved.Load()
	return last != 0 && gen == r.gen.Load() && r.clock.Now().UnixNano()-last < int64(readOnlyStay)
}

// forReads reports whether cfg's DSN asks for connections to a server that
// may be read-only: pgx's target_session_attrs read-only, standby,
// prefer-standby, or any given explicitly (in the DSN or
// PGTARGETSESSIONATTRS).
func forReads(cfg Config) bool {
	if cfg.DriverName != "pgx" && cfg.DriverName != "pgx/v5" {
		return false
	}
	pc, err := pgconn.ParseConfig(cfg.DSN)
	if err != nil {
		return false
	}
	if pc.ValidateConnect != nil {
		v := reflect.ValueOf(pc.ValidateConnect).Pointer()
		for _, f := range []pgconn.ValidateConnectFunc{pgconn.ValidateConnectTargetSessionAttrsReadOnly,
			pgconn.ValidateConnectTargetSessionAttrsStandby, pgconn.ValidateConnectTargetSessionAttrsPreferStandby} {
			if reflect.ValueOf(f).Pointer() == v {
				return true
			}
		}
		return false
	}
	compact := strings.ToLower(strings.Join(strings.Fields(cfg.DSN), ""))
	return strings.Contains(compact, "target_session_attrs=any") ||
		!strings.Contains(compact, "target_session_attrs=") && strings.EqualFold(os.Getenv("PGTARGETSESSIONATTRS"), "any")
}

// refusedReadOnly reports whether err, the error of a statement that began
// when pc's socket had been sent mark bytes, is the server's refusal of a
// write as read-only.
func (pc *physConn) refusedReadOnly(mark uint64, err error) bool {
	if errors.Is(err, driver.ErrBadConn) {
		return pc.wire != nil && pc.wire.proto.refusedBadConn && pc.wire.written.Load() != mark
	}
	return dbguard.Classify(err).Class == dbguard.ClassReadOnly
}

// retryElsewhere is a write refused as read-only on a connection that had
// served statements before, which certainly did not run: driver.ErrBadConn
// in its chain makes database/sql run it again on another connection (a
// new one, as those of the refused generation are closed when taken). The
// server's error stays in the chain (errors.As), and is the caller's
// if every attempt is refused.
type retryElsewhere struct{ err error }

func (e *retryElsewhere) Error() string   { return e.err.Error() }
func (e *retryElsewhere) Unwrap() []error { return []error{e.err, driver.ErrBadConn} }

// leaveReadOnly returns err, the error of a statement that began when the
// attached connection's socket had been sent mark bytes, as the caller
// gets it. A write the server refused as read-only, on a Connector for
// writes, when the server takes no writes from any session (not only the
// caller's read-only transaction or session: see serverReadOnly), closes
// the connection as it is given back and moves the Connector's generation
// on (see serverRole); it is run again elsewhere (retryElsewhere) when it
// certainly did not run and a new connection may find a writable server:
// outside a transaction, one statement a query, on a connection that
// served before, taken from idle or after a statement (a new one was
// refused by the server the DSN finds now). A refusal in a transaction
// begun with TxOptions.ReadOnly is the caller's: nothing is asked; one in
// another transaction is asked about when the transaction has ended
// (leaveReadOnlyAfterTx), since PostgreSQL answers nothing in a
// transaction that failed.
func (c *conn) leaveReadOnly(ctx context.Context, mark uint64, err error) error {
	pc, r := c.pc, c.c.role
	served := pc.served
	if err != driver.ErrSkip { // database/sql prepares instead: nothing ran
		pc.served = true
	}
	if err == nil || r == nil || c.txReadOnly || !pc.refusedReadOnly(mark, err) {
		return err
	}
	if isBadConn(err) { // rejectReadOnly: the driver closed the connection, database/sql runs the write again
		r.checkAfterBadConn(ctx, pc.gen, c.c.testTimeout)
		return err
	}
	if c.inTx {
		c.txRefusal = err
		return err
	}
	if r.settled(pc.gen) || !c.serverReadOnly(ctx, err) || !r.refused(pc.gen) {
		return err
	}
	c.broken = true
	if c.c.watch != nil {
		c.c.watch.forget() // the host it preferred takes no writes now
	}
	if served && pc.wire != nil && !pc.wire.proto.multiStatements {
		return &retryElsewhere{err: err}
	}
	return err
}

// leaveReadOnlyAfterTx asks the server, once a transaction in which a
// write was refused as read-only has ended, whether it takes writes from
// any session (see leaveReadOnly). Its time is bounded by the pool's
// TestTimeout.
func (c *conn) leaveReadOnlyAfterTx() {
	refusal := c.txRefusal
	c.txRefusal = nil
	if refusal == nil || c.pc == nil {
		return
	}
	r := c.c.role
	if !r.settled(c.pc.gen) && c.serverReadOnly(context.Background(), refusal) && r.refused(c.pc.gen) {
		c.broken = true
	}
}

// The statements that ask a server whether it takes writes from any
// session, whatever the asking session set for itself: PostgreSQL's
// reset_val is the value a new session of this user and database starts
// with (the server's configuration, reloaded, and ALTER ROLE or DATABASE
// SET), not the session's own SET; MySQL's and MariaDB's global variables
// are the server's.
const (
	pgReadOnlyQuery    = "SELECT pg_is_in_recovery() OR reset_val = 'on' FROM pg_settings WHERE name = 'default_transaction_read_only'"
	mysqlReadOnlyQuery = "SELECT @@global.read_only OR @@global.innodb_read_only"
)

// serverReadOnly reports whether the attached connection's server takes no
// writes from any session, after err, a refusal as read-only: a MySQL or MariaDB refusal by
// --read-only (1290), read-only mode (1836) or InnoDB read-only (1874)
// says so; for PostgreSQL's 25006 and MySQL's 1792, which a caller's own
// read-only transaction or session gets too, the server is asked on the
// connection, within ctx and the pool's TestTimeout. A question that fails
// is taken for no: the connection is closed if the server did not answer.
func (c *conn) serverReadOnly(ctx context.Context, err error) bool {
	var myErr *mysql.MySQLError
	query := pgReadOnlyQuery
	if errors.As(err, &myErr) {
		if myErr.Number != 1792 { // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
			return true
		}
		query = mysqlReadOnlyQuery
	}
	ctx, cancel := context.WithTimeout(ctx, c.c.testTimeout)
	defer cancel()
	on, err := queryBool(ctx, c.inner, query)
	if err != nil && !errors.As(err, new(*pgconn.PgError)) && !errors.As(err, new(*mysql.MySQLError)) {
		c.broken = true
	}
	return on
}

// checkAfterBadConn asks a new connection whether the server of a
// connection of generation gen, which go-sql-driver/mysql closed on a
// refusal as read-only (rejectReadOnly=true), takes writes from any
// session, within ctx and timeout. One question is asked at a time:
// refusals while it is under way leave the answer to it.
func (r *serverRole) checkAfterBadConn(ctx context.Context, gen uint64, timeout time.Duration) {
	if r.gen.Load() != gen || r.settled(gen) || !r.checking.CompareAndSwap(false, true) {
		return
	}
	defer r.checking.Store(false)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := r.connector.Connect(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if on, _ := queryBool(ctx, conn, mysqlReadOnlyQuery); on {
		r.refused(gen)
	}
}

// queryBool runs query, which returns one boolean, on conn.
func queryBool(ctx context.Context, conn driver.Conn, query string) (bool, error) {
	qc, ok := conn.(driver.QueryerContext)
	if !ok {
		return false, fmt.Errorf("respool: %T does not implement driver.QueryerContext", conn)
	}
	rows, err := qc.QueryContext(ctx, query, nil)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if n := len(rows.Columns()); n != 1 {
		return false, fmt.Errorf("respool: %s: %d columns", query, n)
	}
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		return false, err
	}
	switch v := dest[0].(type) {
	case bool:
		return v, nil
	case int64:
		return v != 0, nil
	case []byte:
		return string(v) == "1", nil
	case string:
		return v == "1", nil
	}
	return false, fmt.Errorf("respool: %s: a %T", query, dest[0])
}
