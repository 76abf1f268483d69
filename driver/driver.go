package driver

import (
	"database/sql"
	"database/sql/driver"

	// The real drivers respool wraps out of the box register themselves
	// as "pgx" and "mysql".
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// DriverName is the name respool registers with database/sql.
const DriverName = "respool"

func init() { sql.Register(DriverName, Driver{}) }

// Driver is respool's database/sql driver. Each sql.Open makes its own pool.
type Driver struct{}

var (
	_ driver.Driver        = Driver{}
	_ driver.DriverContext = Driver{}
)

// Open opens one connection outside any pool reuse; database/sql calls
// OpenConnector instead, which is where the pool lives.
func (d Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.(*Connector).openUnpooled()
}

// OpenConnector parses dsn (see ParseDSN) and returns a Connector with its
// own pool.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(*cfg)
}
