package ratelimit

import (
	"math/big"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"
)

// randomBucketLimit returns a valid bucket Limit whose Period, Permits and
// Burst spread over their whole ranges (log-uniform).
func randomBucketLimit(rng *rand.Rand) Limit {
	logUniform := func(most int64) int64 { // in [1, most]
		v := int64(1) << rng.IntN(bits.Len64(uint64(most)))
		return min(v+rng.Int64N(v), most)
	}
	period := logUniform(maxTau) // a Burst of 1 fits
	l := Limit{Permits: logUniform(period), Period: time.Duration(period)}
	hi, lo := bits.Mul64(maxTau, uint64(l.Permits))
	maxBurst, _ := bits.Div64(hi, lo, uint64(period))
	l.Burst = logUniform(int64(maxBurst))
	if rng.IntN(2) == 0 { // the default, and below
		l.Burst = logUniform(min(l.Permits, int64(maxBurst)))
	}
	return l
}

func rat(a, b int64) *big.Rat { return new(big.Rat).SetFrac64(a, b) }

// TestCompileUnits: for limits over the whole valid range, a bucket's
// interval is Period/Permits exactly when its units allow it, never less,
// and more by at most one unit, a share of at most 2⁻³¹ or about
// Burst/2⁶⁰; its depth and span leave int64 the room bucket.go relies on.
func TestCompileUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	exact := 0
	for range 20000 {
		l := randomBucketLimit(rng)
		if err := l.validate(); err != nil {
			t.Fatal(err)
		}
		r := compile(l)
		want := rat(int64(l.Period), l.Permits)
		got := rat(r.interval, r.scale)
		switch {
		case r.scale < 1 || r.scale > maxScale || r.depth > maxDepth || r.depth != l.Burst*r.interval:
			t.Fatalf("%+v: %+v out of bounds", l, r)
		case r.span < int64(time.Second):
			t.Fatalf("%+v: span %v", l, time.Duration(r.span))
		case got.Cmp(want) < 0:
			t.Fatalf("%+v: interval %v < %v", l, got, want)
		case new(big.Rat).Sub(got, want).Cmp(rat(1, r.scale)) >= 0:
			t.Fatalf("%+v: interval %v more than a unit over %v", l, got, want)
		}
		if got.Cmp(want) == 0 {
			exact++
			continue
		}
		// The share lost: (got − want)/got, at most 2⁻³¹ or about Burst/2⁶⁰.
		share := new(big.Rat).Quo(new(big.Rat).Sub(got, want), got)
		bound := new(big.Rat).SetFrac(big.NewInt(l.Burst), new(big.Int).Lsh(big.NewInt(1), 59))
		if b := rat(1, 1<<31); bound.Cmp(b) < 0 {
			bound = b
		}
		if share.Cmp(bound) > 0 {
			s, _ := share.Float64()
			t.Fatalf("%+v: %+v loses a share %g of the rate", l, r, s)
		}
	}
	if exact < 1000 || exact > 19000 {
		t.Fatalf("%d of 20000 exact: the limits test little", exact)
	}
}

// TestConvertDebt: a debt converted between two rules is the same number of
// permits, rounded up to a unit, at most the new Burst.
func TestConvertDebt(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 20000 {
		from, to := compile(randomBucketLimit(rng)), compile(randomBucketLimit(rng))
		if rng.IntN(4) == 0 { // small bursts: the cap is reached more often
			to = compile(Limit{Permits: to.Permits, Period: to.Period, Burst: 1 + rng.Int64N(4)})
		}
		debt := rng.Int64N(from.depth + 1)
		// want = min(⌈debt × to.interval/from.interval⌉, to.depth)
		w := new(big.Int).Mul(big.NewInt(debt), big.NewInt(to.interval))
		w.Add(w, big.NewInt(from.interval-1))
		w.Quo(w, big.NewInt(from.interval))
		if w.Cmp(big.NewInt(to.depth)) > 0 {
			w.SetInt64(to.depth)
		}
		if got := convertDebt(&from, &to, debt); got != w.Int64() {
			t.Fatalf("%d units of %+v in %+v: %d; want %d", debt, from, to, got, w.Int64())
		}
	}
}
