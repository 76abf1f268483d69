package chaos

import (
	"context"
	"database/sql"
	"database/sql/driver"
)

// driverName is the name chaos registers with database/sql.
const driverName = "chaos"

func init() { sql.Register(driverName, chaosDriver{}) }

// chaosDriver is chaos's database/sql driver: sql.Open("chaos", dsn) wraps
// the driver named by the DSN (see ParseDSN) with the Faults it configures.
type chaosDriver struct{}

var (
	_ driver.Driver        = chaosDriver{}
	_ driver.DriverContext = chaosDriver{}
)

// Open makes one connection through a new Connector; database/sql calls
// OpenConnector instead.
func (chaosDriver) Open(dsn string) (driver.Conn, error) {
	c, err := chaosDriver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector parses dsn (ParseDSN) and returns a new Connector.
func (chaosDriver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, text, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return newConnector(*cfg, text)
}
