package respool

import (
	"context"
	"database/sql"
	"database/sql/driver"

	// The real drivers respool wraps out of the box register themselves
	// as "pgx" and "mysql".
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/pool"
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

// Open opens one connection to the real driver, outside any pool; it is
// here for the driver.Driver contract. database/sql calls OpenConnector,
// which is where the pool lives.
func (Driver) Open(dsn string) (driver.Conn, error) {
	cfg, text, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	base, _, err := baseConnector(*cfg, text.Secrets)
	if err != nil {
		return nil, err
	}
	return base.Connect(context.Background())
}

// OpenConnector parses dsn (see ParseDSN) and returns a Connector with its
// own pool.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, text, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return newConnector(*cfg, text, pool.New[driver.Conn])
}
