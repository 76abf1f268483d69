package driver

import (
	"database/sql/driver"

	"github.com/jackc/pgx/v5/stdlib"
)

// inTransaction reports whether c is known to be inside a transaction that
// database/sql does not know about (a raw BEGIN). Only pgx tells; for other
// drivers it reports false.
func inTransaction(c driver.Conn) bool {
	if pc, ok := c.(*stdlib.Conn); ok {
		return pc.Conn().PgConn().TxStatus() != 'I'
	}
	return false
}
