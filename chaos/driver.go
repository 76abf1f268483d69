package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
)

// DriverName is the name chaos registers with database/sql.
const DriverName = "chaos"

func init() { sql.Register(DriverName, Driver{}) }

// Driver is chaos's database/sql driver: sql.Open("chaos", dsn) wraps the
// driver named by the DSN (see ParseDSN) with the Faults it configures.
type Driver struct{}

var (
	_ driver.Driver        = Driver{}
	_ driver.DriverContext = Driver{}
)

// Open makes one connection through a new Connector; database/sql calls
// OpenConnector instead.
func (Driver) Open(dsn string) (driver.Conn, error) {
	c, err := Driver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector parses dsn (ParseDSN) and returns a new Connector.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, text, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return newConnector(*cfg, text)
}
