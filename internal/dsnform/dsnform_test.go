package dsnform

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReadSplits(t *testing.T) {
	for _, tt := range []struct {
		dsn, rest string
		keys      []string
	}{
		{"postgres://u:p%40w@h:5432/db?sslmode=disable&respool_max_conns=2", "postgres://u:p%40w@h:5432/db?sslmode=disable", []string{"respool_max_conns"}},
		{"postgres://h/db?respool_name=a", "postgres://h/db", []string{"respool_name"}},
		{"postgres://h/db?", "postgres://h/db", nil},
		{"host=h respool_name=x  password='a b' respool_max_conns=2", "host=h  password='a b'", []string{"respool_name", "respool_max_conns"}},
		{"u:p@ss@tcp(h)/db?parseTime=true&RESPOOL_X=1", "u:p@ss@tcp(h)/db?parseTime=true", []string{"RESPOOL_X"}},
	} {
		text, err := Read(tt.dsn, "respool_")
		if err != nil {
			t.Fatalf("Read(%q): %v", tt.dsn, err)
		}
		var keys []string
		for _, p := range text.Params {
			keys = append(keys, p.Key)
		}
		if text.Rest != tt.rest || !slices.Equal(keys, tt.keys) {
			t.Errorf("Read(%q) = %q, %q; want %q, %q", tt.dsn, text.Rest, keys, tt.rest, tt.keys)
		}
	}
}

// TestReadRefusesWhatTheFormCannotCarry: a password written so that its
// form cannot carry it is refused with an error that says how to encode it
// and shows no piece of it (issue 19 item 17).
func TestReadRefusesWhatTheFormCannotCarry(t *testing.T) {
	const pw = "S3cr@t#Pw/1"
	for _, tt := range []struct{ dsn, want string }{
		{"postgres://app:" + pw + "@localhost:5432/app", "percent-encode"},
		{"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app?sslmode=disable", "percent-encode"},
		{"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app", "percent-encode"},
		{"postgres://admin@server:Pw1xyz@h/db", "percent-encode"},
		{"postgres://app:50%off!@h/db", "percent-encode"},
		{"postgres://app:a b c@h/db", "percent-encode"},
		{"postgres://app@h/db?password=S3cr@t=Pw/1", "percent-encode"},
		{"postgres://app@h/db?password=S3cr&tPw1&sslmode=disable", "percent-encode"},
		{"postgres://app@h/db?password=S3cr%zz", "percent-encode"},
		{"host=h password=S3cr@t #Pw=1 dbname=db", "single-quote"},
		{"host=h password='S3cr@t", "escape a quote"},
	} {
		_, err := Read(tt.dsn, "respool_")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%q) = %v, want an error saying %q", tt.dsn, err, tt.want)
			continue
		}
		for _, piece := range []string{"S3c", "Pw1", "Pw/", "50%", "off", "b c"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("Read(%q): %v shows %q", tt.dsn, err, piece)
			}
		}
	}
	for _, dsn := range []string{
		"postgres://app:S3cr?t#Pw:1&x=y@h/db",                  // libpq and pgx read it whole
		"postgres://app:pw@h/db?application_name=a@b",          // an '@' in a query value
		"postgres://h:5432/db?application_name=a@b&password=x", // the same without user information
		"postgres://app@h/db?password=S3cr@t&Pw=1xyz",          // a password, or a run-time parameter
		"app:S3cr@t#Pw/1@tcp(h:3306)/db",                       // mysql ends it at the last '@' before the last '/'
		"host=h password='S3cr@t #Pw/1' dbname=db",
	} {
		if _, err := Read(dsn, "respool_"); err != nil {
			t.Errorf("Read(%q): %v", dsn, err)
		}
	}
}

// TestRedactIssueExamples: a password that starts with '/', which no parser
// reads as a password, and one that runs on as "&key=value" (issue 19
// item 16).
func TestRedactIssueExamples(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app":                 "postgres://app:xxxxx@127.0.0.1:5432/app",
		"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app?sslmode=disable": "postgres://app:xxxxx@127.0.0.1:5432/app?sslmode=disable",
		"postgres://app@h:5432/app?password=S3cr@t&Pw=1xyz":             "postgres://app@h:5432/app?password=xxxxx",
		"postgres://app@h/app?password=S3cr@t&Pw=1xyz&sslmode=disable":  "postgres://app@h/app?password=xxxxx&sslmode=disable",
		"host=h password=S3cr@t Pw=1xyz dbname=app":                     "host=h password=xxxxx dbname=app",
		"file:app.db?_auth_pass=S3cr&t&mode=ro":                         "file:app.db?_auth_pass=xxxxx&mode=ro",
	} {
		if got := Redact(dsn); got != want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", dsn, got, want)
		}
	}
}

// TestSecretsPieces: every piece of a password between two of its
// separators, "t#Pw" of "S3cr@t#Pw/1" among them (pgx's "lookup t#Pw: no
// such host"), is a secret (issue 19 item 17).
func TestSecretsPieces(t *testing.T) {
	s := Secrets(nil).With("S3cr@t#Pw/1")
	for _, want := range []string{"S3cr@t#Pw/1", "S3cr", "t#Pw", "t#Pw/1", "S3cr@t", "S3cr%40t%23Pw%2F1"} {
		if !slices.Contains(s, want) {
			t.Errorf("secrets %q lack %q", s, want)
		}
	}
	for _, short := range []string{"t", "Pw", "1"} {
		if slices.Contains(s, short) {
			t.Errorf("secrets %q hold %q, shorter than MinSecret", s, short)
		}
	}
	if !slices.IsSortedFunc(s, func(a, b string) int { return len(b) - len(a) }) {
		t.Errorf("secrets %q are not longest first", s)
	}
	err := s.Redact(errors.New("lookup t#Pw: no such host"))
	if err.Error() != "lookup xxxxx: no such host" {
		t.Errorf("Redact = %q", err)
	}
}

// dsnCarrier is an error that keeps the DSN in a field, as pgconn's
// ParseConfigError keeps it in ConnString, and redacts its own message.
type dsnCarrier struct{ ConnString string }

func (e *dsnCarrier) Error() string {
	return "cannot parse `" + Redact(e.ConnString) + "`: invalid port"
}

// TestRedactErrorThatCarriesTheDSN: an error whose message shows no
// password but whose fields do is wrapped: its message, %v, %+v, %#v and
// JSON show no password, and errors.As still finds it (issue 19 item 15).
// Wrapped in another error (fmt.Errorf's %w), it prints safely as it is.
func TestRedactErrorThatCarriesTheDSN(t *testing.T) {
	const dsn = "postgres://app:S3cr%40t%23Pw%2F1@127.0.0.1:5432x/app"
	text, err := Read(dsn, "respool_")
	if err != nil {
		t.Fatal(err)
	}
	orig := &dsnCarrier{ConnString: dsn}
	got := text.Secrets.Redact(orig)
	if got == error(orig) {
		t.Fatalf("Redact returned the error as it is: %#v", got)
	}
	for _, e := range []error{got, text.Secrets.Redact(fmt.Errorf("create: %w", orig))} {
		b, jerr := json.Marshal(struct{ E error }{e})
		for _, out := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e),
			fmt.Sprintf("%q", e), fmt.Sprintf("%d", e), string(b) + fmt.Sprint(jerr)} {
			if strings.Contains(out, "S3cr") {
				t.Errorf("the redacted error prints %s", out)
			}
		}
		var dc *dsnCarrier
		if !errors.As(e, &dc) || dc != orig {
			t.Errorf("errors.As does not find the original in %v", e)
		}
	}
	plain := errors.New("connection refused")
	if text.Secrets.Redact(plain) != plain {
		t.Errorf("an error that shows no password was changed")
	}
}

func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		"dial app:S3cr3t@tcp(db:3306)/app: refused":      "dial app:xxxxx@tcp(db:3306)/app: refused",
		"open u:p@ss@/app":                               "open u:xxxxx@/app",
		"file:x.db?_auth_pass=S3cr3t&mode=ro":            "file:x.db?_auth_pass=xxxxx&mode=ro",
		"postgres://u:S3cr@t@h/db failed":                "postgres://u:xxxxx@h/db failed",
		"mysql://u:pw@tcp(h)/d?pwd=1&x=2":                "mysql://u:xxxxx@tcp(h)/d?pwd=xxxxx&x=2",
		"dial tcp 127.0.0.1:3306: connect: refused":      "dial tcp 127.0.0.1:3306: connect: refused",
		"Access denied for user 'app'@'localhost' (YES)": "Access denied for user 'app'@'localhost' (YES)",
		// The cases of health.Redact, which this replaced (issue 15).
		"postgres://app:s3cret@db:5432/x":              "postgres://app:xxxxx@db:5432/x",
		"postgres://app:p@ss@db/x fails":               "postgres://app:xxxxx@db/x fails",
		"host=db password='a b' user=app":              "host=db password=xxxxx user=app",
		"user=app PASSWORD=hunter2 sslpassword=x2":     "user=app PASSWORD=xxxxx sslpassword=xxxxx",
		"no secret here: connection refused (db:5432)": "no secret here: connection refused (db:5432)",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
