package respool

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/respool/respool/internal/fmttest"
	"github.com/respool/respool/pool"
)

// TestPrintingALiveConnector: a Connector printed with any verb while its
// statements open and close, and a Group while members are added, print
// their names, not their insides (issue 19 item 18: fmt iterated the
// Connector's map of open statements while it changed, and crashed).
func TestPrintingALiveConnector(t *testing.T) {
	c, err := NewConnector(Config{Connector: dsnTestConnector{}, Pool: pool.Config{Name: "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := fmttest.WhileUsed(c, 200, func(i int) {
		q := "SELECT " + strconv.Itoa(i%7)
		c.stmts.opened(q)
		c.stmts.closed(q)
	})
	if !strings.Contains(got, `"orders"`) || strings.Contains(got, "stmts") {
		t.Errorf("%%v of a Connector = %s, want its name and no fields", got)
	}

	g, err := NewGroup(GroupConfig{MaxConns: 64, Name: "shards"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	got = fmttest.WhileUsed(g, 200, func(i int) {
		if i < 32 {
			_, _ = g.Connector("k"+strconv.Itoa(i), Config{Connector: dsnTestConnector{}})
		}
	})
	if !strings.Contains(got, `"shards"`) || strings.Contains(got, "members") {
		t.Errorf("%%v of a Group = %s, want its name and no fields", got)
	}
}
