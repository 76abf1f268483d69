package respool

import (
	"database/sql/driver"
	"errors"
	"os"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
)

// serverRole is what a Connector for writes knows of its server's role. A
// write the server refused as read-only (dbguard.ClassReadOnly; or
// go-sql-driver/mysql's driver.ErrBadConn under rejectReadOnly=true) on a
// connection of the current generation means that every connection made
// so far goes to a server that takes no writes: the generation moves on,
// the refused connection is closed as it is given back, and every
// connection of an older generation is closed when it is next taken from
// idle (physFactory.beforeHandOut), without a statement. New connections
// are dialed from the DSN again: with several hosts and
// target_session_attrs=read-write, pgx finds the writable one.
//
// A Connector whose DSN asks for reads (see forReads) has none: a
// read-only server is what it wants.
type serverRole struct {
	gen atomic.Uint64 // the current generation
}

// refused notes a refusal as read-only on a connection of generation gen.
// A connection of an older generation says nothing new: its generation has
// been left already.
func (r *serverRole) refused(gen uint64) { r.gen.CompareAndSwap(gen, gen+1) }

// errLeftReadOnly refuses a connection made before a write was refused
// as read-only: the pool closes it and looks for another.
var errLeftReadOnly = errors.New("respool: a write was refused as read-only since this connection was made: it is closed")

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
// writes, closes the connection as it is given back and moves the
// Connector's generation on (see serverRole); it is run again elsewhere
// (retryElsewhere) when it certainly did not run and a new connection may
// find a writable server: outside a transaction, one statement a query,
// on a connection that served before, taken from idle or after a
// statement (a new one was refused by the server the DSN finds now).
func (c *conn) leaveReadOnly(mark uint64, err error) error {
	pc, r := c.pc, c.c.role
	served := pc.served
	pc.served = true
	if err == nil || r == nil || !pc.refusedReadOnly(mark, err) {
		return err
	}
	c.broken = true
	r.refused(pc.gen)
	if served && !c.inTx && !isBadConn(err) && pc.wire != nil && !pc.wire.proto.multiStatements {
		return &retryElsewhere{err: err}
	}
	return err
}
