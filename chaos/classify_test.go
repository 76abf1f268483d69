package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/respool/respool/dbguard"
)

// TestStatementFaultsClassified: what dbguard makes of each
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
			want  dbguard.Classification
		}{
			{"drop before", Fault{Kind: KindDrop}, nil, dbguard.Classification{Class: dbguard.ClassConnection, NothingSent: true}},
			{"drop after", Fault{Kind: KindDrop, AfterSend: true}, nil, dbguard.Classification{Class: dbguard.ClassAmbiguous}},
			{"freeze deadline", Fault{Kind: KindFreeze}, deadline, dbguard.Classification{Class: dbguard.ClassAmbiguous, Timeout: true}},
			{"freeze cancel", Fault{Kind: KindFreeze}, canceled, dbguard.Classification{Class: dbguard.ClassCaller, Canceled: true}},
		} {
			t.Run(fl.name+" "+tc.name, func(t *testing.T) {
				c, _ := flavoredConnector(t, fl.drv, tc.fault)
				ctx := ctxT(t)
				if tc.ctx != nil {
					ctx = tc.ctx(t)
				}
				err := exec(ctx, connect(t, c))
				if got := dbguard.ClassifyContext(ctx, err); got != tc.want {
					t.Errorf("%q: %+v, want %+v", err, got, tc.want)
				}
			})
		}
	}
	for _, tc := range []struct {
		err   error
		class dbguard.Class
	}{
		{PgError("40001"), dbguard.ClassTxRetryable}, {PgError("40P01"), dbguard.ClassTxRetryable},
		{PgError("55P03"), dbguard.ClassTxRetryable}, {PgError("53300"), dbguard.ClassBackPressure},
		{PgError("57P01"), dbguard.ClassConnection}, {PgError("08006"), dbguard.ClassConnection},
		{PgError("42601"), dbguard.ClassCaller}, {PgError("23505"), dbguard.ClassCaller},
		{PgError("57014"), dbguard.ClassOther}, {PgError("XX000"), dbguard.ClassOther},
		{MySQLError(1213), dbguard.ClassTxRetryable}, {MySQLError(1205), dbguard.ClassTxRetryable},
		{MySQLError(1040), dbguard.ClassBackPressure}, {MySQLError(1226), dbguard.ClassBackPressure},
		{MySQLError(1927), dbguard.ClassConnection}, {MySQLError(1053), dbguard.ClassConnection},
		{MySQLError(1064), dbguard.ClassCaller}, {MySQLError(1062), dbguard.ClassCaller},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			c, _ := newFake(t, Config{Faults: []Fault{{Kind: KindError, Err: tc.err}}})
			err := exec(ctxT(t), connect(t, c))
			if got := dbguard.Classify(err); got.Class != tc.class {
				t.Errorf("%q: %v, want %v", err, got, tc.class)
			}
		})
	}
}
