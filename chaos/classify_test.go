package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/respool/respool/resilience/dbclass"
)

// TestStatementFaultsClassified: what resilience/dbclass makes of each
// statement fault, for each driver's errors. The classes are those of the
// real errors measured in integration/chaos against real servers.
func TestStatementFaultsClassified(t *testing.T) {
	deadline := func(t *testing.T) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		t.Cleanup(cancel)
		return ctx
	}
	canceled := func(t *testing.T) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	for _, fl := range flavors {
		for _, tc := range []struct {
			name  string
			fault Fault
			ctx   func(*testing.T) context.Context
			want  dbclass.Classification
		}{
			{"drop before", Fault{Kind: KindDrop}, nil, dbclass.Classification{Class: dbclass.ClassConnection, NothingSent: true}},
			{"drop after", Fault{Kind: KindDrop, AfterSend: true}, nil, dbclass.Classification{Class: dbclass.ClassAmbiguous}},
			{"freeze deadline", Fault{Kind: KindFreeze}, deadline, dbclass.Classification{Class: dbclass.ClassAmbiguous, Timeout: true}},
			{"freeze cancel", Fault{Kind: KindFreeze}, canceled, dbclass.Classification{Class: dbclass.ClassCaller, Canceled: true}},
		} {
			t.Run(fl.name+" "+tc.name, func(t *testing.T) {
				c, _ := flavoredConnector(t, fl.drv, tc.fault)
				ctx := ctxT(t)
				if tc.ctx != nil {
					ctx = tc.ctx(t)
				}
				err := exec(ctx, connect(t, c))
				if got := dbclass.ClassifyContext(ctx, err); got != tc.want {
					t.Errorf("%q: %+v, want %+v", err, got, tc.want)
				}
			})
		}
	}
	for _, tc := range []struct {
		err   error
		class dbclass.Class
	}{
		{PgError("40001"), dbclass.ClassTxRetryable}, {PgError("40P01"), dbclass.ClassTxRetryable},
		{PgError("55P03"), dbclass.ClassTxRetryable}, {PgError("53300"), dbclass.ClassBackPressure},
		{PgError("57P01"), dbclass.ClassConnection}, {PgError("08006"), dbclass.ClassConnection},
		{PgError("42601"), dbclass.ClassCaller}, {PgError("23505"), dbclass.ClassCaller},
		{PgError("57014"), dbclass.ClassOther}, {PgError("XX000"), dbclass.ClassOther},
		{MySQLError(1213), dbclass.ClassTxRetryable}, {MySQLError(1205), dbclass.ClassTxRetryable},
		{MySQLError(1040), dbclass.ClassBackPressure}, {MySQLError(1226), dbclass.ClassBackPressure},
		{MySQLError(1927), dbclass.ClassConnection}, {MySQLError(1053), dbclass.ClassConnection},
		{MySQLError(1064), dbclass.ClassCaller}, {MySQLError(1062), dbclass.ClassCaller},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			c, _ := newFake(t, Config{Faults: []Fault{{Kind: KindError, Err: tc.err}}})
			err := exec(ctxT(t), connect(t, c))
			if got := dbclass.Classify(err); got.Class != tc.class {
				t.Errorf("%q: %v, want %v", err, got, tc.class)
			}
		})
	}
}
