package resil

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/clock/clocktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// uncomparable is a Clock whose dynamic type cannot be compared: IsSystem
// must not panic on it.
type uncomparable struct {
	clock.Clock
	_ []int
}

func TestIsSystem(t *testing.T) {
	for _, c := range []struct {
		name string
		c    clock.Clock
		want bool
	}{
		{"nil", nil, true},
		{"System()", clock.System(), true},
		{"ClockOr(nil)", ClockOr(nil), true},
		{"clocktest", clocktest.New(time.Time{}), false},
		{"uncomparable", uncomparable{}, false},
	} {
		if got := IsSystem(c.c); got != c.want {
			t.Errorf("IsSystem(%s) = %v; want %v", c.name, got, c.want)
		}
	}
	clk := clocktest.New(time.Time{})
	if ClockOr(clk) != clock.Clock(clk) {
		t.Error("ClockOr replaced a Clock that was set")
	}
}
