package respool

// RawConn returns the real driver's connection behind driverConn, the value
// sql.Conn.Raw passes to its function. For a respool connection that is the
// connection of the driver respool wraps (a *stdlib.Conn for pgx, whose
// Conn method returns the *pgx.Conn; go-sql-driver/mysql's connection); any
// other value is returned as it is, so that the same code works on a
// *sql.DB opened with the plain driver:
//
//	err := sqlConn.Raw(func(dc any) error {
//		pgxConn := respool.RawConn(dc).(*stdlib.Conn).Conn()
//		_, err := pgxConn.CopyFrom(ctx, pgx.Identifier{"t"}, cols, src)
//		return err
//	})
//
// The connection must not be used after the function returns, as sql.Conn.Raw
// says. It is also what one of Connector.Pool's objects holds.
func RawConn(driverConn any) any {
	switch c := driverConn.(type) {
	case *conn:
		if inner := c.Unwrap(); inner != nil {
			return inner
		}
		return nil // a detached conn, which sql.Conn.Raw never passes
	case *physConn:
		return c.Conn
	}
	return driverConn
}
