// Package reclaim holds what the stores of a shared budget (modules
// redisbudget and dbbudget) share in asking their pools for slots back
// (pool.Reclaimer).
package reclaim

// Spread divides n among k pools: each gets n/k, and n%k of them one more,
// starting at first (rotated by the caller from one ask to the next, so
// that no pool is always asked for the remainder). The parts sum to n.
func Spread(n, k, first int) []int {
	parts := make([]int, k)
	if k == 0 {
		return parts
	}
	for i := range parts {
		parts[i] = n / k
	}
	for i := range n % k {
		parts[(first+i)%k]++
	}
	return parts
}
