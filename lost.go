package respool

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/dbguard"
)

// ErrStatementLost is the error of a statement whose connection broke after
// the statement may have reached the server, when the real driver reported
// it as driver.ErrBadConn. database/sql would run such a statement again on
// another connection, as driver.ErrBadConn promises that nothing was sent;
// pgx's stdlib driver (v5.12) says so of an Exec without arguments that was
// sent in full (pgconn calls its "conn closed" safe to retry), and one
// db.ExecContext then runs an UPDATE several times. respool returns
// ErrStatementLost instead, which database/sql does not retry: the outcome
// is unknown. errors.Is(err, dbguard.ErrAmbiguous) holds, and
// dbguard.Classify puts it in dbguard.ClassAmbiguous.
//
// A driver.ErrBadConn of a statement that certainly did not run still
// reaches database/sql, which then runs the statement on another
// connection: one that sent nothing (respool counts what reaches the
// connection's socket; see physConn.unsent), and one the server refused as
// read-only under go-sql-driver/mysql's rejectReadOnly=true, whose
// documented contract that is (see protocol.refusedBadConn).
var ErrStatementLost error = lostStatementError{}

type lostStatementError struct{}

func (lostStatementError) Error() string {
	return "respool: the connection broke after the statement was sent: " +
		"it may or may not have run at the server, and was not run again"
}

func (lostStatementError) Is(target error) bool { return target == dbguard.ErrAmbiguous }

// sentMark returns what pc's socket had been sent so far, to be compared
// after a statement (see statementErr).
func (pc *physConn) sentMark() uint64 {
	if pc.wire == nil {
		return 0
	}
	return pc.wire.written.Load()
}

// unsent reports whether the statement that failed with driver.ErrBadConn
// certainly did not run at the server: on a socket respool watches, no byte
// was written since mark, or the real driver returns driver.ErrBadConn
// after writing only for a statement the server refused (see
// protocol.refusedBadConn); on any other, the real driver is trusted, but
// for pgx's stdlib driver, which reports statements it sent as
// driver.ErrBadConn (see ErrStatementLost).
func (pc *physConn) unsent(mark uint64) bool {
	if pc.wire != nil {
		return pc.wire.proto.refusedBadConn || pc.wire.written.Load() == mark
	}
	_, pgx := pc.Conn.(*stdlib.Conn)
	return !pgx
}

// statementErr is the error the caller gets for a statement (an exec or a
// query) the real driver ran on pc since mark, with ctx: a
// driver.ErrBadConn that may have followed the statement to the server
// becomes ErrStatementLost (matching ctx's error too when ctx has ended),
// and a statement the server stopped on ctx's end matches ctx's error too
// (see contextStopped).
func (pc *physConn) statementErr(ctx context.Context, mark uint64, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, driver.ErrBadConn) {
		if pc.unsent(mark) {
			return err
		}
		if ctxErr := ctx.Err(); ctxErr != nil { // pgx gave the connection up when ctx ended
			_, pgx := pc.Conn.(*stdlib.Conn)
			return newStopped(ctxErr, ErrStatementLost, pgx)
		}
		return ErrStatementLost
	}
	return contextStopped(ctx, err)
}
