package chaos

import (
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/internal/dsnform"
)

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		name, dsn string
		want      Config
	}{
		{"url", "postgres://u:pw@h/db?sslmode=disable&chaos_error=40001&chaos_error_rate=0.1&chaos_seed=7",
			Config{DriverName: "pgx", DSN: "postgres://u:pw@h/db?sslmode=disable", Seed: 7,
				Faults: []Fault{{Name: "error", Kind: KindError, Err: PgError("40001"), Rate: 0.1}}}},
		{"url password with ? and & before the host", "postgresql://u:p?w&x@h/db?chaos_drop=after&a=1",
			Config{DriverName: "pgx", DSN: "postgresql://u:p?w&x@h/db?a=1",
				Faults: []Fault{{Name: "drop", Kind: KindDrop, AfterSend: true}}}},
		{"url percent-encoded", "postgres://h/db?chaos_name=a%20b&chaos_drop_during=5s-10s%2C1m-",
			Config{DriverName: "pgx", DSN: "postgres://h/db", Name: "a b",
				Faults: []Fault{{Name: "drop", Kind: KindDrop,
					During: []Window{{5 * time.Second, 10 * time.Second}, {From: time.Minute}}}}}},
		{"keyword/value", "host=h chaos_refuse_every=3 password='a b\\'c'  chaos_connect_latency=5ms dbname=x",
			Config{DriverName: "pgx", DSN: "host=h password='a b\\'c'  dbname=x", Faults: []Fault{
				{Name: "connect_latency", Kind: KindLatency, On: OpConnect, Latency: 5 * time.Millisecond},
				{Name: "refuse", Kind: KindRefuse, On: OpConnect, Every: 3}}}},
		{"keyword/value only chaos", " chaos_freeze=off ", Config{DriverName: "pgx",
			Faults: []Fault{{Name: "freeze", Kind: KindFreeze, Off: true}}}},
		{"mysql", "u:pw@tcp(h:3306)/db?parseTime=true&chaos_drop=after&chaos_drop_rate=5%25&chaos_error=1213&chaos_error_on=commit,exec",
			Config{DriverName: "mysql", DSN: "u:pw@tcp(h:3306)/db?parseTime=true", Faults: []Fault{
				{Name: "drop", Kind: KindDrop, AfterSend: true, Rate: 0.05},
				{Name: "error", Kind: KindError, Err: MySQLError(1213), On: OpCommit | OpExec}}}},
		{"mysql only chaos", "u:pw@tcp(h)/db?chaos_latency=1ms&chaos_latency_jitter=2ms&chaos_latency_off=1",
			Config{DriverName: "mysql", DSN: "u:pw@tcp(h)/db", Faults: []Fault{
				{Name: "latency", Kind: KindLatency, Latency: time.Millisecond, Jitter: 2 * time.Millisecond, Off: true}}}},
		{"other driver", "file:x.db?mode=ro&chaos_driver=" + fakeName + "&chaos_error=mysql:1205&chaos_connect_error=pg:53300",
			Config{DriverName: fakeName, DSN: "file:x.db?mode=ro", Faults: []Fault{
				{Name: "connect_error", Kind: KindError, On: OpConnect, Err: PgError("53300")},
				{Name: "error", Kind: KindError, Err: MySQLError(1205)}}}},
		{"no keys", "host=h  dbname=x", Config{DriverName: "pgx", DSN: "host=h  dbname=x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDSN(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestParseDSNErrors(t *testing.T) {
	const pw = "hunter2-secret"
	for _, tc := range []struct {
		dsn, want string
	}{
		{"chaos_eror=40001", `unknown DSN key "chaos_eror"`},
		{"CHAOS_ERROR=40001", `unknown DSN key "CHAOS_ERROR"`},
		{"chaos_error_jitter=1s", `unknown DSN key "chaos_error_jitter"`},
		{"chaos_refuse_on=exec", `unknown DSN key "chaos_refuse_on"`},
		{"chaos_seed=1 chaos_seed=2", `"chaos_seed" is given more than once`},
		{"chaos_drop_rate=0", `"chaos_drop_rate" has invalid value "0": want a probability > 0 and ≤ 1`},
		{"chaos_drop_rate=150%", `has invalid value "150%"`},
		{"chaos_drop_every=0", `"chaos_drop_every" has invalid value "0": want an integer ≥ 1`},
		{"chaos_drop_during=10s-5s", `"chaos_drop_during" has invalid value "10s-5s"`},
		{"chaos_drop_on=connect", `"chaos_drop_on" has invalid value "connect"`},
		{"chaos_drop=sideways", `want before (nothing sent: driver.ErrBadConn) or after`},
		{"chaos_error=4001", `want a SQLSTATE`},
		{"u@tcp(h)/d?chaos_error=40001x", `want a MySQL error number`},
		{"x:1?chaos_driver=" + fakeName + "&chaos_error=40001", `want pg:SQLSTATE or mysql:NUMBER`},
		{"chaos_error_rate=0.5", `chaos_error's keys need chaos_error`},
		{"chaos_latency_every=2", `chaos_latency needs chaos_latency`},
		{"chaos_driver=chaos", `"chaos_driver" has invalid value "chaos"`},
		{"chaos_driver=nope", `"chaos_driver" has invalid value "nope": want a registered`},
		{"chaos_seed=-1", `want an integer ≥ 0`},
		{"postgres://h/?chaos_name=%zz", `want a percent-encoded value`},
	} {
		for _, dsn := range []string{tc.dsn, tc.dsn + " password=" + pw, "password=" + pw + " " + tc.dsn} {
			if strings.Contains(tc.dsn, "?") || strings.Contains(tc.dsn, ":") {
				dsn = tc.dsn
			}
			_, err := ParseDSN(dsn)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseDSN(%q) = %v, want ErrInvalidConfig saying %q", dsn, err, tc.want)
			} else if strings.Contains(err.Error(), pw) {
				t.Errorf("ParseDSN(%q): %q shows the password", dsn, err)
			}
		}
	}
	_, err := ParseDSN("host=h password='" + pw)
	if !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), pw) {
		t.Errorf("an unterminated quote: %v", err)
	}
	// sql.Open reads the DSN as ParseDSN does: a DSN is configuration.
	const want = `chaos: DSN key "chaos_drop_rate" has invalid value "2": want a probability > 0 and ≤ 1, such as 0.25 or 25%`
	db, err := sql.Open("chaos", "password="+pw+" chaos_drop_rate=2")
	if err == nil {
		_ = db.Close()
	}
	if !errors.Is(err, ErrInvalidConfig) || err.Error() != want {
		t.Errorf("sql.Open: %v, want ErrInvalidConfig saying %q", err, want)
	}
}

// FuzzParseDSN: ParseDSN never panics, leaves no chaos key in the DSN it
// passes on, and never shows a password in an error.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"chaos_error=40001", "chaos_drop=after&chaos_drop_rate=0.5", "chaos_x=1",
		"chaos_freeze_during=1s-2s,3s-", "a='b c' chaos_seed=3", "chaos_name=%41"} {
		f.Add(s)
	}
	const pw = "PWsecret9"
	f.Fuzz(func(t *testing.T, s string) {
		for _, dsn := range []string{"postgres://u:" + pw + "@h/db?" + s, "password=" + pw + " " + s,
			"u:" + pw + "@tcp(h)/db?" + s} {
			cfg, err := ParseDSN(dsn)
			if err != nil {
				if strings.Contains(err.Error(), pw) && !strings.Contains(s, pw) {
					t.Fatalf("ParseDSN(%q): %q shows the password", dsn, err)
				}
				continue
			}
			if _, params, err := dsnform.Split(cfg.DSN, keyPrefix); err == nil && len(params) > 0 && dsnform.Of(cfg.DSN) == dsnform.Of(dsn) {
				t.Fatalf("ParseDSN(%q) passes on %q, with chaos keys %v", dsn, cfg.DSN, params)
			}
		}
	})
}
