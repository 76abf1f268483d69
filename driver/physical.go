package driver

import (
	"context"
	"database/sql/driver"

	"github.com/respool/respool/factory"
)

// physConn is one physical connection: the real driver's connection and
// respool's state of it. It is the object respool's pool holds, so its state
// lives and dies with the connection. Its fields are touched only by whoever
// holds it: the pool while it idles, one conn while it is attached to it.
type physConn struct {
	driver.Conn // the real driver's connection

	// used is false until the connection is first taken: a connection just
	// made needs no reset, as database/sql resets only connections it reuses.
	used bool
}

// physFactory is the pool's factory: factory.Connector's life cycle applied
// to the real connection inside each physConn.
type physFactory struct {
	real factory.Connector
}

var _ factory.Factory[driver.Conn] = physFactory{}

func (f physFactory) Create(ctx context.Context) (driver.Conn, error) {
	c, err := f.real.Create(ctx)
	if err != nil {
		return nil, err
	}
	return &physConn{Conn: c}, nil
}

func (f physFactory) Validate(c driver.Conn) error { return f.real.Validate(c.(*physConn).Conn) }

func (f physFactory) Test(ctx context.Context, c driver.Conn) error {
	return f.real.Test(ctx, c.(*physConn).Conn)
}

func (f physFactory) Destroy(c driver.Conn) error { return f.real.Destroy(c.(*physConn).Conn) }
