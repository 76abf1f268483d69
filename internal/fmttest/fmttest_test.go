package fmttest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counter prints through a method of its own, which reads its count
// atomically (printed by fmt's reflection, the count is a data race).
type counter struct{ n atomic.Int64 }

func (c *counter) Format(f fmt.State, _ rune) { _, _ = fmt.Fprintf(f, "counter(%d)", c.n.Load()) }

func TestWhileUsed(t *testing.T) {
	var c counter
	got := WhileUsed(&c, 10, func(int) { c.n.Add(1) })
	if !strings.HasPrefix(got, "counter(") {
		t.Errorf("%%v = %q", got)
	}
}
