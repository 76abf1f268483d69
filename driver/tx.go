package driver

import "database/sql/driver"

// tx is the real driver's transaction, watched for driver.ErrBadConn so
// that a connection that died in Commit or Rollback is not reused.
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
	if t.c.reclaimed {
		return errReclaimed
	}
	return t.c.check(f())
}
