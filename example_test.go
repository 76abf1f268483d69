package respool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool"
	"github.com/respool/respool/pool"
)

func ExampleParseDSN() {
	cfg, err := respool.ParseDSN("postgres://app:s3cret@db.example.com:5432/app?sslmode=verify-full" +
		"&respool_max_conns=20&respool_max_idle_time=5m&respool_max_queue=100")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("driver:", cfg.DriverName)
	fmt.Println("max conns:", cfg.Pool.MaxObjects)
	fmt.Println("max idle time:", cfg.Pool.MaxIdle)
	fmt.Println("max queue:", cfg.Pool.MaxQueueSize)
	// The respool keys are gone from the DSN that reaches pgx.
	fmt.Println("dsn:", respool.RedactDSN(cfg.DSN))
	// Output:
	// driver: pgx
	// max conns: 20
	// max idle time: 5m0s
	// max queue: 100
	// dsn: postgres://app:xxxxx@db.example.com:5432/app?sslmode=verify-full
}

// A Config in code can set what a DSN cannot, such as the pool's logger, or a
// driver.Connector of one's own.
func ExampleNewConnector() {
	c, err := respool.NewConnector(respool.Config{
		DriverName: "mysql",
		DSN:        "app:s3cret@tcp(db.example.com:3306)/app?parseTime=true",
		Pool: pool.Config{
			Name:         "orders-db",
			MaxObjects:   20,
			MaxIdle:      5 * time.Minute,
			MaxQueueSize: 100,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(c) // db.Close closes the pool too
	defer db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var now time.Time
	if err := db.QueryRowContext(ctx, "SELECT NOW()").Scan(&now); err != nil {
		log.Fatal(err) // errors.Is(err, pool.ErrQueueFull) when 100 callers already wait
	}
	// The pool's Stats, not db.Stats, count the physical connections.
	s := c.Stats()
	fmt.Println(now, s.Total, s.Idle, s.Takes)
}

func ExampleConfig_FormatDSN() {
	cfg := respool.Config{
		DriverName: "mysql",
		DSN:        "app@tcp(db.example.com:3306)/app?parseTime=true",
		Pool:       pool.Config{MaxObjects: 20, MaxLifetime: time.Hour},
		TestQuery:  "SELECT 1",
	}
	dsn := cfg.FormatDSN()
	fmt.Println(dsn)

	back, err := respool.ParseDSN(dsn)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.DSN, back.Pool.MaxObjects, back.Pool.MaxLifetime, back.TestQuery)
	// Output:
	// app@tcp(db.example.com:3306)/app?parseTime=true&respool_max_conns=20&respool_max_lifetime=1h0m0s&respool_test_query=SELECT%201
	// app@tcp(db.example.com:3306)/app?parseTime=true 20 1h0m0s SELECT 1
}

// A *sql.DB opened with sql.Open hides respool's Connector; ConnectorOf
// finds it, for its Stats, without naming the pool.
func ExampleConnectorOf() {
	db, err := sql.Open("respool", "app:s3cret@tcp(db.example.com:3306)/app?respool_max_conns=20")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	c, err := respool.ConnectorOf(db)
	if err != nil {
		log.Fatal(err) // not a respool *sql.DB
	}
	st := c.Stats()
	fmt.Println(c.Name(), st.MaxObjects, st.Total)
	// Output:
	// respool(mysql) 20 0
}

// sql.Conn.Raw passes respool's connection; RawConn returns the real
// driver's, here pgx's *pgx.Conn, for its own API: CopyFrom, LISTEN/NOTIFY.
// The same code works on a *sql.DB opened with sql.Open("pgx", …).
func ExampleRawConn() {
	db, err := sql.Open("respool", "postgres://app:s3cret@db.example.com/app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	err = conn.Raw(func(dc any) error {
		pgxConn, err := respool.RawConn[*pgx.Conn](dc)
		if err != nil {
			return err
		}
		n, err := pgxConn.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"id", "name"},
			pgx.CopyFromRows([][]any{{1, "signup"}, {2, "login"}}))
		fmt.Println(n, "rows copied")
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}

// The hooks get the real driver's connection, a database/sql/driver.Conn:
// imported as respool, this package leaves the name driver to
// database/sql/driver.
func ExampleConfig_afterConnect() {
	cfg, err := respool.ParseDSN("postgres://app:s3cret@db.example.com/app?respool_max_conns=10" +
		"&respool_init_sql=SET%20application_name%20%3D%20%27orders%27")
	if err != nil {
		log.Fatal(err)
	}
	cfg.AfterConnect = func(ctx context.Context, conn driver.Conn) error { // after the init SQL
		_, err := conn.(*stdlib.Conn).Conn().Exec(ctx, "SET search_path TO orders, public")
		return err
	}
	cfg.BeforeAcquire = func(ctx context.Context, conn driver.Conn) error {
		return nil // an error closes the connection; the caller gets another
	}
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	fmt.Println(cfg.InitSQL)
	// Output:
	// [SET application_name = 'orders']
}
