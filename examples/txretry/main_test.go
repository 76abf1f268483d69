package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example: every transfer commits despite the injected
// serialization failures, the total is kept and the ledger has each
// transfer once (run checks the figures it prints).
func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"80 transfers committed, 0 failed", "total balance 1000 (opening 1000); 80 ledger entries"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
