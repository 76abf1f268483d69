package reclaim

import (
	"slices"
	"testing"
)

// Spread gives every pool n/k and the remainder one each from first on,
// round: the parts sum to n.
func TestSpread(t *testing.T) {
	for _, c := range []struct {
		n, k, first int
		want        []int
	}{
		{0, 2, 0, []int{0, 0}},
		{3, 1, 5, []int{3}},
		{3, 2, 0, []int{2, 1}},
		{3, 2, 1, []int{1, 2}},
		{5, 3, 2, []int{2, 1, 2}},
		{1, 0, 0, []int{}},
	} {
		if got := Spread(c.n, c.k, c.first); !slices.Equal(got, c.want) {
			t.Errorf("Spread(%d, %d, %d) = %v; want %v", c.n, c.k, c.first, got, c.want)
		}
	}
}
