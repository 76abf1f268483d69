package respool

import (
	"errors"
	"strings"
	"testing"
)

// fuzzPassword marks the password in the fuzz seeds. Where RedactDSN hides
// it, no error and no String may show it.
const fuzzPassword = "Pw0rdMark"

// addDSNSeeds adds the table tests' DSNs, and variants whose password is
// fuzzPassword, to f's corpus.
func addDSNSeeds(f *testing.F) {
	var seeds []string
	for _, tt := range parseDSNFormTests {
		seeds = append(seeds, tt.dsn)
	}
	for _, tt := range parseDSNBadValueTests {
		seeds = append(seeds, tt.dsn)
	}
	for _, tt := range redactDSNTests {
		seeds = append(seeds, tt.dsn)
	}
	seeds = append(seeds, roundTripEdgeCases...)
	seeds = append(seeds,
		"postgres://u:"+fuzzPassword+"@h/db?respool_max_conns=x",
		"postgres://u:"+fuzzPassword+"@h:5432,[::1]:5433/db?sslmode=disable&respool_min_idle=2&respool_max_conns=1",
		"postgres://h/db?password="+fuzzPassword+"&respool_nope=1",
		"host=h password="+fuzzPassword+" respool_max_conns=x",
		"host=h password='"+fuzzPassword+" \\' x' respool_leak_stack=maybe",
		"u:"+fuzzPassword+"@tcp(h:3306)/db?respool_max_idle_time=5&parseTime=true",
		"u:"+fuzzPassword+"@unix(/tmp/s)/db?respool_max_conns=1&respool_max_conns=1",
		"sqlserver://u:"+fuzzPassword+"@h/inst?respool_max_conns=x",
		"postgres://h/db?respool_name=orders%20%26%20co&respool_max_conns=2",
		"respool_name='a b\\' c' host=h",
		"u@tcp(h)/db?respool_name=a+b%0A",
	)
	for _, s := range seeds {
		f.Add(s)
		for _, pw := range []string{"secret", "password", "pw", "p"} {
			if strings.Contains(s, ":"+pw+"@") || strings.Contains(s, "password="+pw) {
				f.Add(strings.ReplaceAll(s, pw, fuzzPassword))
			}
		}
	}
}

// FuzzParseDSN checks that ParseDSN never panics, that its errors match
// ErrInvalidConfig and never show the password, and that a parsed Config
// describes itself without the password.
func FuzzParseDSN(f *testing.F) {
	addDSNSeeds(f)
	f.Fuzz(func(t *testing.T, dsn string) {
		c, err := ParseDSN(dsn)
		redacted := RedactDSN(dsn)
		// The password is hidden when RedactDSN removes the only marker.
		hidden := strings.Count(dsn, fuzzPassword) == 1 && !strings.Contains(redacted, fuzzPassword)
		if RedactDSN(redacted) != redacted {
			t.Errorf("RedactDSN is not idempotent: %q then %q", redacted, RedactDSN(redacted))
		}
		if err != nil {
			if c != nil {
				t.Errorf("ParseDSN returned both a Config and %v", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseDSN error %v does not match ErrInvalidConfig", err)
			}
			msg := err.Error()
			if hidden && strings.Contains(msg, fuzzPassword) {
				t.Errorf("ParseDSN(%q) error shows the password: %s", dsn, msg)
			}
			if len(dsn) >= 24 && strings.Contains(msg, dsn) {
				t.Errorf("ParseDSN(%q) error shows the DSN: %s", dsn, msg)
			}
			return
		}
		if hidden {
			if s := c.String(); strings.Contains(s, fuzzPassword) {
				t.Errorf("Config.String of %q shows the password: %s", dsn, s)
			}
			if s := c.LogValue().String(); strings.Contains(s, fuzzPassword) {
				t.Errorf("Config.LogValue of %q shows the password: %s", dsn, s)
			}
		}
	})
}

// FuzzDSNRoundTrip checks that FormatDSN is the inverse of ParseDSN:
// ParseDSN(FormatDSN(ParseDSN(dsn))) is the same Config, and FormatDSN of it
// is the same DSN.
func FuzzDSNRoundTrip(f *testing.F) {
	addDSNSeeds(f)
	f.Fuzz(checkRoundTrip)
}
