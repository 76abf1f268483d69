package respool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	// The real drivers respool wraps out of the box register themselves
	// as "pgx" and "mysql".
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/pool"
)

// driverName is the name respool registers with database/sql.
const driverName = "respool"

func init() { sql.Register(driverName, sqlDriver{}) }

// sqlDriver is respool's database/sql driver. The value registered holds no
// Connector: sql.Open calls its OpenConnector, which makes one with its own
// pool. The value a Connector's Driver method returns holds that Connector,
// which is how ConnectorOf finds it behind a *sql.DB (sql.DB.Driver returns
// its connector's Driver).
type sqlDriver struct{ c *Connector }

var (
	_ driver.Driver        = sqlDriver{}
	_ driver.DriverContext = sqlDriver{}
)

// Open opens one connection to the real driver, outside any pool; it is
// here for the driver.Driver contract. database/sql calls OpenConnector,
// which is where the pool lives.
func (sqlDriver) Open(dsn string) (driver.Conn, error) {
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
func (sqlDriver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, text, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return newConnector(*cfg, text, pool.New[driver.Conn])
}

// ConnectorOf returns the Connector behind db: a *sql.DB from
// sql.Open("respool", dsn), OpenDB, or sql.OpenDB of a Connector (from
// NewConnector or Group.Connector). It is how a program that opened a DSN
// reaches its pool's Stats, ResilienceStats, Breaker and Pause, without
// naming the pool:
//
//	db, err := sql.Open("respool", os.Getenv("DATABASE_URL"))
//	c, err := respool.ConnectorOf(db)
//	st := c.Stats()
//
// For a *sql.DB of another driver, or nil, it returns an error that names
// what it got; never a nil Connector without an error.
func ConnectorOf(db *sql.DB) (*Connector, error) {
	if db == nil {
		return nil, errors.New("respool: ConnectorOf: the *sql.DB is nil")
	}
	d := db.Driver()
	rd, ok := d.(sqlDriver)
	switch {
	case !ok:
		return nil, fmt.Errorf(`respool: ConnectorOf: the *sql.DB's driver is a %T, not respool's: open it with sql.Open("respool", dsn) or respool.OpenDB`, d)
	case rd.c == nil:
		return nil, errors.New("respool: ConnectorOf: the *sql.DB was opened with respool's driver but not through its Connector")
	}
	return rd.c, nil
}
