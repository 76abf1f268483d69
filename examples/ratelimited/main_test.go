package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example: every call is served, and the API answered 429
// no more often than there were calls in flight when it first did.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "served: 128, failed: 0") {
		t.Error("not every call was served")
	}
	m := regexp.MustCompile(`answered 429 with Retry-After (\d+) times`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no count of 429s")
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 || n > clients {
		t.Errorf("the API answered 429 %d times: want 1 to %d (the calls in flight)", n, clients)
	}
}
