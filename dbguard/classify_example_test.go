package dbguard_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/dbguard"
)

// Each error as a driver returns it, and what the mechanisms around the
// call do with it.
func Example_classify() {
	errs := []error{
		&pgconn.PgError{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"},
		&mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"},
		fmt.Errorf("commit: %w", io.ErrUnexpectedEOF), // the connection broke after COMMIT was sent
		&pgconn.PgError{Severity: "ERROR", Code: "23505", Message: "duplicate key value violates unique constraint"},
		context.Canceled,
	}
	for _, err := range errs {
		v := dbguard.Classify(err)
		fmt.Printf("%-45s breaker=%-5v retry-connect=%-5v retry-tx=%v\n",
			v, v.IsFailure(), v.IsConnectRetryable(), v.IsTxRetryable())
	}
	// Output:
	// back-pressure code=53300 nothing-sent pause=1s breaker=false retry-connect=true  retry-tx=false
	// tx-retryable code=1213                        breaker=false retry-connect=false retry-tx=true
	// ambiguous                                     breaker=true  retry-connect=false retry-tx=false
	// caller code=23505                             breaker=false retry-connect=false retry-tx=false
	// caller canceled                               breaker=false retry-connect=false retry-tx=false
}

// BackPressure is the classifier a pool-wide pause takes: the server's
// "too many connections" closes the gate for d.
func ExampleBackPressure() {
	err := fmt.Errorf("connect: %w", &mysql.MySQLError{Number: 1040, Message: "Too many connections"})
	if d, ok := dbguard.BackPressure(err); ok {
		fmt.Println("pause everyone for", d)
	}
	// Output: pause everyone for 1s
}

// A pause of your own for back-pressure: BackPressure's verdict, another
// duration.
func ExampleBackPressure_ownPause() {
	classify := func(err error) (time.Duration, bool) {
		_, ok := dbguard.BackPressure(err)
		return 5 * time.Second, ok
	}
	d, ok := classify(&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"})
	fmt.Println(d, ok)
	// Output: 5s true
}

// ClassifyContext tells the caller's cancellation from the server's
// statement timeout when both arrive as 57014 (pgx with
// CancelRequestContextWatcherHandler).
func ExampleClassifyContext() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := &pgconn.PgError{Severity: "ERROR", Code: "57014", Message: "canceling statement due to user request"}
	fmt.Println(dbguard.Classify(err))
	fmt.Println(dbguard.ClassifyContext(ctx, err))
	// Output:
	// other code=57014 timeout
	// caller code=57014 canceled
}
