package redisbudget

import (
	"fmt"
	"strings"
	"testing"

	"github.com/respool/respool"
)

// A budget URL's password, however written (a space, a '#', a bad escape),
// shows in no error nor print of the Config.
func TestABudgetURLsPasswordIsNeverShown(t *testing.T) {
	for _, spec := range []string{
		"redis://:pa ss@h:6379/0?name=o&max=2",
		"redis://:pass#word@h:6379/0?name=o&max=2",
		"redis://:pa%zzss@h:6379/0?name=o&max=2",
		"redis://:pass@h:6379/0?name=o&max=2&foo=1",
		"redis://user:pass@h:6379/x?name=o&max=2",
	} {
		cfg := respool.Config{DriverName: "pgx", DSN: "postgres://db/app", SharedBudget: spec}
		outs := map[string]string{"String": cfg.String(), "%#v": fmt.Sprintf("%#v", cfg)}
		if _, err := respool.NewConnector(cfg); err != nil {
			outs["err"] = err.Error()
			outs["err %+v"] = fmt.Sprintf("%+v", err)
		}
		for what, s := range outs {
			for _, frag := range []string{"pa ss", "pass#word", "zzss", "pass@", "pass#", "\"pa\"", "pa%zz", "pa%20ss", "pa+ss", "%zz"} {
				if strings.Contains(s, frag) {
					t.Errorf("%q: %s shows %q: %s", spec, what, frag, s)
				}
			}
		}
	}
}
