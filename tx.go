package respool

import (
	"context"
	"database/sql/driver"
)

// tx is the real driver's transaction, watched for driver.ErrBadConn so
// that a connection that died in Commit or Rollback is not reused, and for
// a write refused as read-only in it (see conn.leaveReadOnlyAfterTx). A
// driver.ErrBadConn after COMMIT or ROLLBACK was sent becomes
// ErrStatementLost, as for any statement: whoever reads it (RunInTx) must
// not take it for a transaction that certainly did not commit.
type tx struct {
	c     *conn
	inner driver.Tx
}

func (t tx) Commit() error   { return t.end(t.inner.Commit) }
func (t tx) Rollback() error { return t.end(t.inner.Rollback) }

// end runs the real transaction's Commit or Rollback.
func (t tx) end(f func() error) error {
	locked := t.c.lock()
	defer t.c.unlock(locked)
	t.c.inTx, t.c.txReadOnly = false, false
	if t.c.reclaimed {
		return errReclaimed
	}
	pc := t.c.pc
	if pc == nil { // detached: the real transaction reports it
		return t.c.check(f())
	}
	mark := pc.sentMark()
	err := t.c.check(pc.statementErr(context.Background(), mark, f()))
	if err == nil {
		t.c.leaveReadOnlyAfterTx()
	}
	return err
}
