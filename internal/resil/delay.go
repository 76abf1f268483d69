package resil

import (
	"strings"

	"github.com/respool/respool/resilience/delay"
)

// DelayOr returns s, or def when s is of the zero Kind (delay.Default): a
// Strategy is one value, taken whole from the Config or from the default.
func DelayOr(s, def delay.Strategy) delay.Strategy {
	if s.Kind == delay.Default {
		return def
	}
	return s
}

// CheckDelay checks s as the value of field in mechanism's Config, allowing
// only the given kinds (all when none are given).
func CheckDelay(s delay.Strategy, mechanism, field string, kinds ...delay.Kind) error {
	if len(kinds) > 0 && s.Kind != delay.Default {
		ok := false
		for _, k := range kinds {
			ok = ok || k == s.Kind
		}
		if err := Check(ok, mechanism, field+".Kind", s.Kind, "one of "+kindList(kinds)); err != nil {
			return err
		}
	}
	return FirstError(
		Check(s.Kind <= delay.Custom, mechanism, field+".Kind", s.Kind, "a delay.Kind"),
		Check(s.Initial >= 0, mechanism, field+".Initial", s.Initial, "a duration >= 0"),
		Check(s.Kind == delay.None || s.Kind == delay.Custom || s.Kind == delay.Default || s.Initial > 0,
			mechanism, field+".Initial", s.Initial, "a duration > 0 for a "+s.Kind.String()+" delay"),
		Check(s.Multiplier == 0 || s.Multiplier >= 1, mechanism, field+".Multiplier", s.Multiplier, "0 (meaning 2) or a factor >= 1"),
		Check(s.Max >= 0, mechanism, field+".Max", s.Max, "a duration >= 0 (0: no cap)"),
		Check(s.Jitter <= delay.Decorrelated, mechanism, field+".Jitter", s.Jitter, "a delay.Jitter"),
		Check(s.Kind != delay.Custom || s.Func != nil, mechanism, field+".Func", "nil", "a function for a custom delay"),
	)
}

func kindList(kinds []delay.Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	return strings.Join(names, ", ")
}
