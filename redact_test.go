package respool

import (
	"bytes"
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/pool"
)

// pwMark is in every password of these tests and nowhere else in their DSNs:
// an output that holds it shows (part of) a password. It is matched without
// regard to case.
const pwMark = "Zq9Pw"

// hasMark reports whether s holds pwMark.
func hasMark(s string) bool { return markIndex(s) >= 0 }

// markIndex returns the index of pwMark in s, in any case, or -1.
func markIndex(s string) int {
	lower := func(s string) string { // ASCII only, byte for byte, so that indexes hold
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	return strings.Index(lower(s), lower(pwMark))
}

// atPasswordDSNs have a password with unencoded separators: the common
// mistake of issue 6 (postgres://u:p@ssw0rd@host/db) and its relatives.
// Each part of each password between separators holds pwMark.
var atPasswordDSNs = []string{
	"postgres://u:p@ssw0rd" + pwMark + "@db.example.com/app",
	"postgres://u:p" + pwMark + "@ssw0rd" + pwMark + "@db.example.com:5432/app?sslmode=disable",
	"postgresql://u:a" + pwMark + "@b" + pwMark + "@c" + pwMark + "@h/app",
	"postgres://u:p" + pwMark + "@ss/w0rd" + pwMark + "@db.example.com:5432/app",
	"postgres://u:p" + pwMark + "@ss?w0rd" + pwMark + "@db.example.com:5432/app",
	"postgres://u:p" + pwMark + "@ss?a=w0rd" + pwMark + "@db.example.com:5432/app",
	"postgres://u:p" + pwMark + "/ss?a=w0rd" + pwMark + "@db.example.com:5432/app",
	"postgres://u:p" + pwMark + ":ss," + pwMark + "@db.example.com:5432/app",
	"postgres://admin@server:p" + pwMark + "@db.example.com/app",
	"postgres://u:p" + pwMark + "@ss@db.example.com/app?password=x" + pwMark + "&sslmode=disable",
	"postgres://u@h/app?password=a" + pwMark + "&b" + pwMark + "&sslmode=disable",
	"u:p@ssw0rd" + pwMark + "@tcp(db.example.com:3306)/app",
	"u:p" + pwMark + "/ss@w0rd" + pwMark + "@tcp(db.example.com:3306)/app?parseTime=true",
	"u:p" + pwMark + "/ss?w0rd" + pwMark + "@tcp(db.example.com:3306)",
	"u:p" + pwMark + "?ss@w0rd" + pwMark + "@tcp(db.example.com:3306)",
	"u:p" + pwMark + "@ss(" + pwMark + "@tcp(db.example.com:3306)/app",
	"sqlserver://u:p" + pwMark + "@ss/w0rd" + pwMark + "@h:1433/inst",
}

func TestRedactDSNPasswordWithSeparators(t *testing.T) {
	for _, dsn := range atPasswordDSNs {
		got := RedactDSN(dsn)
		if hasMark(got) || !strings.Contains(got, dsnform.Redacted) {
			t.Errorf("RedactDSN(%q) = %q", dsn, got)
		}
		if again := RedactDSN(got); again != got {
			t.Errorf("RedactDSN not idempotent: %q then %q", got, again)
		}
	}
}

// redactWideTests show how far RedactDSN masks when an '@' follows the user
// information.
var redactWideTests = []struct{ dsn, want string }{
	{"postgres://u:p@ssw0rdSECRET@host/db", "postgres://u:xxxxx@host/db"},
	{"postgres://u:p@ss?x=y@host/db?sslmode=disable", "postgres://u:xxxxx@host/db?sslmode=disable"},
	{"postgres://u:pw@h/db?application_name=a@b", "postgres://u:xxxxx@b"}, // masks too much, by choice
	{"postgres://u@h:5432/db?application_name=a@b", "postgres://u@h:5432/db?application_name=a@b"},
	{"postgres://h:5432/db?application_name=a@b&password=pw", "postgres://h:5432/db?application_name=a@b&password=xxxxx"},
	{"postgres://h:5432/db?x@y", "postgres://h:xxxxx@y"}, // a malformed query holding '@'
	{"postgres://h/db?password=a&b&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"},
	{"postgres://h/db?password=&b", "postgres://h/db?password=xxxxx"},
	{"user:p@ss@tcp(h)/db", "user:xxxxx@tcp(h)/db"},
	{"user:pa/ss?x@tcp(h)", "user:xxxxx@tcp(h)"},
	{"user@tcp(h)/db?connectionAttributes=a:b@c", "user@tcp(h)/db?connectionAttributes=a:b@c"},
}

func TestRedactDSNWide(t *testing.T) {
	for _, tt := range redactWideTests {
		if got := RedactDSN(tt.dsn); got != tt.want {
			t.Errorf("RedactDSN(%q)\n got %q\nwant %q", tt.dsn, got, tt.want)
		}
	}
}

// fragmentDriver's connections fail with an error that shows its DSN and
// the DSN cut at every separator a parser might cut it at, as a real
// driver's error shows a host or a database name that a misread password
// spilled into.
type fragmentDriver struct{}

const fragmentDriverName = "respool-fragment-test"

func init() { sql.Register(fragmentDriverName, fragmentDriver{}) }

func (fragmentDriver) Open(dsn string) (sqldriver.Conn, error) { return nil, fragmentError(dsn) }

func (fragmentDriver) OpenConnector(dsn string) (sqldriver.Connector, error) {
	return fragmentConnector{dsn: dsn}, nil
}

type fragmentConnector struct{ dsn string }

func (c fragmentConnector) Connect(context.Context) (sqldriver.Conn, error) {
	return nil, fragmentError(c.dsn)
}
func (fragmentConnector) Driver() sqldriver.Driver { return fragmentDriver{} }

// errFragment is the sentinel fragmentError wraps.
var errFragment = errors.New("fragment driver refuses")

func fragmentError(dsn string) error {
	var b strings.Builder
	b.WriteString("dsn " + dsn)
	for _, sep := range []string{"@", "/", "?", ":", ",", "&", "=", "(", ")", "#", " ", "'", `\`} {
		b.WriteString("\n" + sep + " " + strings.Join(strings.Split(dsn, sep), " | "))
	}
	return fmt.Errorf("%w: %s", errFragment, b.String())
}

// recordingHandler is a slog.Handler that keeps its lines and tells got of
// each.
type recordingHandler struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
	got chan struct{}
	h   slog.Handler
}

func newRecordingLogger() (*slog.Logger, *recordingHandler) {
	rh := &recordingHandler{mu: new(sync.Mutex), buf: new(bytes.Buffer), got: make(chan struct{}, 64)}
	rh.h = slog.NewTextHandler(rh.buf, nil)
	return slog.New(rh), rh
}

func (r *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordingHandler) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	err := r.h.Handle(ctx, rec)
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
	return err
}
func (r *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordingHandler{mu: r.mu, buf: r.buf, got: r.got, h: r.h.WithAttrs(as)}
}
func (r *recordingHandler) WithGroup(g string) slog.Handler {
	return &recordingHandler{mu: r.mu, buf: r.buf, got: r.got, h: r.h.WithGroup(g)}
}

func (r *recordingHandler) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// waitLine waits, at most settleTimeout, for a line holding want.
func (r *recordingHandler) waitLine(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(settleTimeout)
	for {
		if s := r.String(); strings.Contains(s, want) {
			return s
		}
		select {
		case <-r.got:
		case <-timeout:
			t.Fatalf("no log line with %q after %v; log: %s", want, settleTimeout, r.String())
		}
	}
}

func TestDriverErrorsHidePasswordFragments(t *testing.T) {
	for _, dsn := range atPasswordDSNs {
		t.Run(dsn, func(t *testing.T) {
			cfg, err := ParseDSN(dsn)
			if err != nil && dsnform.Of(dsn) == dsnform.URL {
				// The URL form cannot carry the password as written.
				if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "percent-encode") || hasMark(err.Error()) {
					t.Errorf("ParseDSN: %v, want ErrInvalidConfig saying to percent-encode, without the password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDSN: %v", err)
			}
			cfg.DriverName = fragmentDriverName
			c, err := NewConnector(*cfg)
			if err != nil {
				t.Fatalf("NewConnector: %v", err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			_, err = c.Connect(context.Background())
			if !errors.Is(err, errFragment) {
				t.Fatalf("Connect: got %v, want the driver's error", err)
			}
			if hasMark(err.Error()) {
				t.Errorf("Connect error shows the password: %v", err)
			}
			if err := db.PingContext(context.Background()); err == nil || hasMark(err.Error()) {
				t.Errorf("Ping error shows the password (or is nil): %v", err)
			}
			line, stats := createFailedLine(t, *cfg)
			if hasMark(line) || !strings.Contains(line, errFragment.Error()) {
				t.Errorf("log shows the password (or not the error): %s", line)
			}
			if s := fmt.Sprintf("%+v", stats); hasMark(s) {
				t.Errorf("Stats show the password: %s", s)
			}
		})
	}
}

// createFailedLine starts a Connector on cfg whose pool keeps one idle
// connection, and returns the log line of that connection's failed creation
// (nobody waits for it, so the pool logs it) and the pool's Stats after.
func createFailedLine(t *testing.T, cfg Config) (string, pool.Stats) {
	t.Helper()
	logger, rec := newRecordingLogger()
	cfg.Pool.Logger, cfg.Pool.MinIdle = logger, 1
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	line := rec.waitLine(t, "create failed")
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return line, c.Stats()
}

// configOutputs returns every way a program might print or log cfg.
func configOutputs(cfg *Config) map[string]string {
	out := map[string]string{
		"String":   cfg.String(),
		"GoString": cfg.GoString(),
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%-90v"} {
		out["value "+verb] = fmt.Sprintf(verb, *cfg)
		out["pointer "+verb] = fmt.Sprintf(verb, cfg)
		if verb == "%x" {
			for _, k := range []string{"value " + verb, "pointer " + verb} {
				b, _ := hex.DecodeString(out[k])
				out[k] = string(b)
			}
		}
	}
	out["Sprint value"] = fmt.Sprint(*cfg)
	out["Sprint in a struct"] = fmt.Sprintf("%+v", struct{ C Config }{*cfg})
	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		l := slog.New(h(&b))
		l.Info("open", slog.Any("cfg", *cfg), slog.Any("ptr", cfg), "kv", *cfg)
		out["slog "+name] = b.String()
	}
	out["LogValue"] = cfg.LogValue().String()
	return out
}

func TestConfigOutputsHideThePassword(t *testing.T) {
	dsns := append([]string{
		"postgres://jack:" + pwMark + "@h/db?respool_max_conns=3",
		"host=h password='" + pwMark + " x' respool_max_conns=3",
		"jack:" + pwMark + "@tcp(h:3306)/db?respool_max_conns=3",
	}, atPasswordDSNs...)
	for _, dsn := range dsns {
		cfg, err := ParseDSN(dsn)
		if err != nil && dsnform.Of(dsn) == dsnform.URL {
			// ParseDSN refuses the password as written (see
			// TestDriverErrorsHidePasswordFragments); a Config may hold it.
			cfg, err = &Config{DriverName: "pgx", DSN: dsn}, nil
		}
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", dsn, err)
		}
		cfg.Pool.Name = "orders"
		for how, s := range configOutputs(cfg) {
			if hasMark(s) || !strings.Contains(s, dsnform.Redacted) {
				t.Errorf("%s of the Config of %q shows the password (or no %s): %s", how, dsn, dsnform.Redacted, s)
			}
		}
	}
}

func TestConfigGoString(t *testing.T) {
	c := Config{DriverName: "pgx", DSN: "postgres://u:pw@h/db", Pool: pool.Config{MaxObjects: 3}}
	got := fmt.Sprintf("%#v", c)
	if !strings.HasPrefix(got, `respool.Config{DriverName:"pgx", DSN:"postgres://u:xxxxx@h/db", Connector:driver.Connector(nil), Pool:pool.Config{MaxObjects:3,`) {
		t.Errorf("%%#v = %s", got)
	}
	if got := fmt.Sprintf("%v", (*Config)(nil)); got != "<nil>" {
		t.Errorf("%%v of a nil *Config = %q", got)
	}
}

// TestRealDriverErrorsHideThePassword opens pgx and go-sql-driver/mysql, plain
// and through respool, with badly written passwords against a closed local
// port: whatever the real driver's parse or connect error shows, respool's
// errors and log lines must not show the password. What the plain drivers
// show is logged, for comparison.
func TestRealDriverErrorsHideThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String() // closed below: connections are refused
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	m := pwMark
	tests := []struct{ driver, dsn string }{
		// The '@' of issue 6: pgx takes "ssw0rd…@127.0.0.1" as the host.
		{"pgx", "postgres://u:p@s!sw0rd" + m + "@" + addr + "/db"},
		{"pgx", "postgres://u:p" + m + "@s!s/w0rd" + m + "@" + addr + "/db"},
		{"pgx", "postgres://u:p" + m + "?w0rd" + m + "@" + addr + "/db"},
		{"pgx", "postgres://u:p" + m + "@s!s?w0rd" + m + "@" + addr + "/db"},
		{"pgx", "postgres://admin@server:p" + m + "@" + addr + "/db"},
		{"pgx", "postgres://u@" + addr + "/db?password=a" + m + "&b" + m},
		{"pgx", "postgres://u:p" + m + "%zz@" + addr + "/db"},
		{"pgx", "host=" + host + " port=" + port + " user=u password='p" + m + " unterminated"},
		{"pgx", "host=" + host + " port=" + port + " user= password=p" + m + " dbname=db"},
		{"pgx", "host=" + host + " port=" + port + " user= password='p" + m + " x" + m + "' dbname=db"},
		{"mysql", "u:p@ss" + m + "@tcp(" + addr + ")/db"},
		{"mysql", "u:p" + m + "/w0rd" + m + "@tcp(" + addr + ")"},
		{"mysql", "u:p" + m + "?w0rd" + m + "@tcp(" + addr + ")"},
		{"mysql", "u:p" + m + "(w0rd" + m + "@tcp(" + addr + ")/db"},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			defer cancel()
			if plain, err := sql.Open(tt.driver, tt.dsn); err != nil {
				t.Logf("plain %s: sql.Open: shows password %v: %v", tt.driver, hasMark(err.Error()), err)
			} else {
				err := plain.PingContext(ctx)
				t.Logf("plain %s: Ping: shows password %v: %v", tt.driver, hasMark(fmt.Sprint(err)), err)
				_ = plain.Close()
			}

			withDriver := tt.dsn
			if tt.driver == "mysql" && dsnform.Of(tt.dsn) != dsnform.MySQL {
				t.Fatalf("%q is not of the mysql form", tt.dsn)
			}
			db, err := sql.Open(driverName, withDriver)
			if err != nil {
				if hasMark(err.Error()) {
					t.Errorf("sql.Open error shows the password: %v", err)
				}
				return
			}
			defer db.Close()
			if err := db.PingContext(ctx); err == nil || hasMark(err.Error()) {
				t.Errorf("Ping error shows the password (or is nil): %v", err)
			}

			cfg, err := ParseDSN(tt.dsn)
			if err != nil {
				t.Fatalf("ParseDSN: %v", err)
			}
			if line, _ := createFailedLine(t, *cfg); hasMark(line) {
				t.Errorf("log line shows the password: %s", line)
			}
		})
	}
}

func TestPrintedPoolHidesThePassword(t *testing.T) {
	// The pool's factory holds the connector that makes connections from
	// the DSN; printing the pool must not print the DSN.
	for _, dsn := range []string{
		"postgres://u:" + pwMark + "@127.0.0.1:1/db",
		"u:" + pwMark + "@tcp(127.0.0.1:1)/db",
		"p=" + pwMark, // a driver without DriverContext
	} {
		cfg, err := ParseDSN(dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%q): %v", dsn, err)
		}
		if dsnform.Of(dsn) == dsnform.KV {
			cfg.DriverName = dsnTestDriverName
		}
		c, err := NewConnector(*cfg)
		if err != nil {
			t.Fatalf("NewConnector: %v", err)
		}
		// Closed and ended first: fmt reads the pool's fields without its atomics.
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.pool.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"%v", "%+v", "%#v"} {
			if s := fmt.Sprintf(verb, c.pool); hasMark(s) {
				t.Errorf("%s of the pool of %q shows the password: %s", verb, dsn, s)
			}
			if s := fmt.Sprintf(verb, c); hasMark(s) {
				t.Errorf("%s of the Connector of %q shows the password: %s", verb, dsn, s)
			}
		}
	}
}
