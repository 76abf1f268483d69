package respool

import (
	sqldriver "database/sql/driver"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// closeErrConn is a real driver's connection whose Close reports err.
type closeErrConn struct {
	sqldriver.Conn // nil: only Close is called
	err            error
}

func (c closeErrConn) Close() error { return c.err }

// TestDestroyTakesMySQLBusyBufferAsClosed: go-sql-driver/mysql's Close of
// a connection with unread rows (one the pool reclaims as leaked) fails to
// say goodbye with ErrBusyBuffer but closes the socket all the same: the
// connection is closed, not a destroy_failed. Any other error is Destroy's.
func TestDestroyTakesMySQLBusyBufferAsClosed(t *testing.T) {
	f := physFactory{}
	if err := f.Destroy(&physConn{Conn: closeErrConn{err: mysql.ErrBusyBuffer}}); err != nil {
		t.Errorf("Destroy of a mysql connection whose Close said busy buffer: %v; want nil", err)
	}
	broken := errors.New("close: broken pipe")
	if err := f.Destroy(&physConn{Conn: closeErrConn{err: broken}}); !errors.Is(err, broken) {
		t.Errorf("Destroy of a connection whose Close failed: %v; want %v", err, broken)
	}
}
