package resil

import (
	"errors"
	"testing"
	"time"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/delay"
)

func TestCheckDelayNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		s     delay.Strategy
		kinds []delay.Kind
		field string
	}{
		{delay.Strategy{Kind: delay.Constant}, nil, "Delay.Initial"},
		{delay.Strategy{Kind: delay.Exponential, Initial: time.Second, Multiplier: 0.5}, nil, "Delay.Multiplier"},
		{delay.Strategy{Kind: delay.Custom}, nil, "Delay.Func"},
		{delay.Strategy{Kind: delay.Constant, Initial: 1, Max: -1}, nil, "Delay.Max"},
		{delay.Strategy{Kind: delay.Linear, Initial: 1}, []delay.Kind{delay.Constant, delay.Exponential}, "Delay.Kind"},
	} {
		err := CheckDelay(tc.s, "test", "Delay", tc.kinds...)
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: error %v; want a ConfigError on %s", tc.s, err, tc.field)
		}
	}
	if err := CheckDelay(delay.Strategy{}, "test", "Delay"); err != nil {
		t.Errorf("zero strategy: %v", err)
	}
}

func TestDelayOrTakesTheStrategyWhole(t *testing.T) {
	def := delay.Strategy{Kind: delay.Exponential, Initial: time.Second, Multiplier: 2, Max: time.Minute}
	if got := DelayOr(delay.Strategy{Max: time.Hour}, def); got.Kind != def.Kind || got.Max != time.Minute {
		t.Errorf("DelayOr of a Default kind = %+v; want the default whole", got)
	}
	own := delay.Strategy{Kind: delay.Constant, Initial: 3 * time.Second}
	if got := DelayOr(own, def); got.Kind != delay.Constant || got.Initial != own.Initial || got.Max != 0 {
		t.Errorf("DelayOr of a set kind = %+v; want it whole", got)
	}
}

func TestCheck(t *testing.T) {
	err := Check(false, "bulkhead", "MaxConcurrent", -1, "a count >= 0")
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Mechanism != "bulkhead" || ce.Field != "MaxConcurrent" || ce.Value != -1 {
		t.Fatalf("Check = %#v; want a *resilience.ConfigError naming bulkhead's MaxConcurrent", err)
	}
	if Check(true, "x", "y", 0, "z") != nil {
		t.Fatal("a passing check returned an error")
	}
	if err := FirstError(nil, err, errors.New("later")); err != ce {
		t.Fatalf("FirstError = %v; want the first error", err)
	}
}
