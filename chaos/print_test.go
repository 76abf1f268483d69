package chaos

import (
	"net"
	"strings"
	"testing"

	"github.com/respool/respool/internal/fmttest"
)

// TestPrintingALiveConnector: a Connector printed with any verb while
// connections freeze and thaw prints its name, not its insides (issue 19
// item 18: fmt iterated its map of frozen connections while it changed, and
// printed the wrapped driver's configuration, password and all).
func TestPrintingALiveConnector(t *testing.T) {
	c, _ := newFake(t, Config{Name: "chaotic"})
	got := fmttest.WhileUsed(c, 200, func(int) {
		a, b := net.Pipe()
		thaw := c.freezeNet(newNetConn(a))
		thaw()
		_ = a.Close()
		_ = b.Close()
	})
	if !strings.Contains(got, `"chaotic"`) || strings.Contains(got, "frozen") {
		t.Errorf("%%v of a Connector = %s, want its name and no fields", got)
	}
}
