package respool

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5/stdlib"
)

// RawConn returns the real driver's connection behind driverConn, the value
// sql.Conn.Raw passes to its function, as a T:
//
//	err := sqlConn.Raw(func(dc any) error {
//		pgxConn, err := respool.RawConn[*pgx.Conn](dc)
//		if err != nil {
//			return err
//		}
//		_, err = pgxConn.CopyFrom(ctx, pgx.Identifier{"t"}, cols, src)
//		return err
//	})
//
// It unwraps driverConn while it has a method Unwrap() driver.Conn:
// respool's connection (whose real connection is attached while
// database/sql uses it), and package chaos's. The connection found is
// returned when it is a T; for pgx, whose connection is a *stdlib.Conn,
// RawConn[*pgx.Conn] returns its Conn(). go-sql-driver/mysql's connection
// type is unexported: RawConn[driver.Conn] returns it. Anything else is an
// error naming the connection's type and T. The same code works on a
// *sql.DB opened with the plain driver, whose connection is returned as it
// is.
//
// The connection must not be used after the function returns, as
// sql.Conn.Raw says.
func RawConn[T any](driverConn any) (T, error) {
	var zero T
	v := driverConn
	for range 16 { // a chain of wrappers, not a cycle
		u, ok := v.(interface{ Unwrap() driver.Conn })
		if !ok {
			break
		}
		inner := u.Unwrap()
		if inner == nil {
			return zero, errors.New("respool: RawConn: the connection holds no real connection (it is not in use: call RawConn inside sql.Conn.Raw's function)")
		}
		v = inner
	}
	if t, ok := v.(T); ok {
		return t, nil
	}
	if sc, ok := v.(*stdlib.Conn); ok {
		if t, ok := any(sc.Conn()).(T); ok {
			return t, nil
		}
	}
	return zero, fmt.Errorf("respool: RawConn: the connection is a %T, not a %v", v, reflect.TypeFor[T]())
}
