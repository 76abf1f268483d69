package dbguard

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/retry"
)

// TestMergeCoversEveryField walks the fields of the three mechanisms'
// Configs: a field added to breaker.Config, retry.Config or pause.Config
// without its line in mergeBreaker, mergeRetry or mergePause fails here
// (the preset's value would be lost, or the caller's ignored).
func TestMergeCoversEveryField(t *testing.T) {
	t.Run("breaker", func(t *testing.T) { checkMerge(t, mergeBreaker) })
	t.Run("retry", func(t *testing.T) { checkMerge(t, mergeRetry) })
	t.Run("pause", func(t *testing.T) { checkMerge(t, mergePause) })
}

// checkMerge checks that merge(c, p) takes every zero field of c from p,
// and keeps every field c sets.
func checkMerge[C any](t *testing.T, merge func(c, p C) C) {
	t.Helper()
	var preset C
	pv := reflect.ValueOf(&preset).Elem()
	for i := range pv.NumField() {
		pv.Field(i).Set(fieldValue(t, pv.Type().Field(i), 1))
	}
	got := reflect.ValueOf(merge(*new(C), preset))
	for i := range pv.NumField() {
		if f := pv.Type().Field(i); !sameValue(got.Field(i), pv.Field(i)) {
			t.Errorf("%s zero: merged %v, want the preset's %v", f.Name, got.Field(i), pv.Field(i))
		}
	}
	for i := range pv.NumField() {
		f := pv.Type().Field(i)
		var c C
		cv := reflect.ValueOf(&c).Elem()
		cv.Field(i).Set(fieldValue(t, f, 2))
		got := reflect.ValueOf(merge(c, preset))
		for j := range pv.NumField() {
			want, whose := pv.Field(j), "the preset's"
			if j == i {
				want, whose = cv.Field(j), "the one given"
			}
			if f.Type.Kind() == reflect.Bool && j == i {
				continue // on when either says so (NoWait): nothing to tell apart
			}
			if !sameValue(got.Field(j), want) {
				t.Errorf("%s given: merged %s = %v, want %s %v", f.Name, pv.Type().Field(j).Name, got.Field(j), whose, want)
			}
		}
	}
}

var clockType = reflect.TypeFor[clock.Clock]()

// fieldValue returns a value of f's type that is not zero, told apart by
// seed; a func, when called, reports seed (see sameValue).
func fieldValue(t *testing.T, f reflect.StructField, seed int) reflect.Value {
	typ := f.Type
	v := reflect.New(typ).Elem()
	switch {
	case typ == clockType:
		v.Set(reflect.ValueOf(clocktest.New(time.Unix(int64(seed), 0))))
	case typ == reflect.TypeFor[delay.Strategy]():
		v.Set(reflect.ValueOf(delay.Strategy{Kind: delay.Kind(seed), Initial: time.Duration(seed) * time.Millisecond}))
	case typ.Kind() == reflect.String:
		v.SetString(fmt.Sprint("name", seed))
	case typ.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.CanInt():
		v.SetInt(int64(seed))
	case v.CanUint():
		v.SetUint(uint64(seed))
	case v.CanFloat():
		v.SetFloat(float64(seed) / 10)
	case typ.Kind() == reflect.Func:
		v.Set(reflect.MakeFunc(typ, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, typ.NumOut())
			for i := range out {
				out[i] = reflect.Zero(typ.Out(i))
			}
			funcSeed = seed
			return out
		}))
	default:
		t.Fatalf("field %s of type %v: no test value; teach fieldValue its type", f.Name, typ)
	}
	return v
}

// funcSeed is the seed of the last func fieldValue made that was called.
var funcSeed int

// sameValue reports whether a and b are the same value: funcs by the seed
// they report when called, interfaces by identity, the rest deeply.
func sameValue(a, b reflect.Value) bool {
	switch {
	case a.Kind() == reflect.Func:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return callSeed(a) == callSeed(b)
	case a.Kind() == reflect.Interface:
		return a.Interface() == b.Interface()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func callSeed(f reflect.Value) int {
	funcSeed = 0
	in := make([]reflect.Value, f.Type().NumIn())
	for i := range in {
		in[i] = reflect.Zero(f.Type().In(i))
	}
	f.Call(in)
	return funcSeed
}

// TestMergeKeepsTheDatabaseValues checks the merge with the real presets:
// a Config that sets one breaker value keeps the database window, not
// breaker's generic 100; a window smaller than the preset's minimum of
// calls lowers it (as breaker's own default does).
func TestMergeKeepsTheDatabaseValues(t *testing.T) {
	c, err := Config{Breaker: breaker.Config{FailureRate: 0.25}}.merged()
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Breaker; b.WindowSize != 20 || b.MinimumCalls != 10 || b.FailureRate != 0.25 || b.HalfOpenCalls != 1 {
		t.Fatalf("FailureRate 0.25 alone: window %d, minimum %d, rate %v, half-open calls %d; want 20, 10, 0.25, 1",
			b.WindowSize, b.MinimumCalls, b.FailureRate, b.HalfOpenCalls)
	}
	if c.Retry.MaxAttempts != 3 || c.Pause.MaxPause != 30*time.Second || !c.Pause.NoWait || c.Pause.Classify == nil {
		t.Fatalf("retry %+v, pause %+v; want the presets'", c.Retry, c.Pause)
	}
	if c, _ = (Config{Breaker: breaker.Config{WindowSize: 4}}).merged(); c.Breaker.MinimumCalls != 4 {
		t.Fatalf("WindowSize 4 alone: MinimumCalls %d, want 4", c.Breaker.MinimumCalls)
	}
	g, err := New(Config{Name: "db", Retry: retry.Config[struct{}]{MaxAttempts: 1}, Pause: pause.Config{MaxPause: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.c.Breaker.Name != "db" || g.c.Retry.Name != "db" || g.c.Pause.Name != "db" || g.c.Pause.MaxPause != time.Minute {
		t.Fatalf("names %q %q %q, MaxPause %v; want the Guard's name and 1m",
			g.c.Breaker.Name, g.c.Retry.Name, g.c.Pause.Name, g.c.Pause.MaxPause)
	}
}
