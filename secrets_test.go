package respool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/health"
	"github.com/respool/respool/internal/dsnform"
)

// fragmentOf returns the first piece of password of 3 bytes or more (each
// 3-byte window, as written and percent-encoded, but a window that is one
// %XX escape) that s shows, or "".
func fragmentOf(s, password string) string {
	for _, spelling := range []string{password, dsnform.EscapeQuery(password)} {
		for i := 0; i+3 <= len(spelling); i++ {
			if w := spelling[i : i+3]; w[0] != '%' && strings.Contains(s, w) {
				return w
			}
		}
	}
	return ""
}

// errorOutputs returns every way a program might print err.
func errorOutputs(err error) map[string]string {
	out := map[string]string{"Error": err.Error()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		out[verb] = fmt.Sprintf(verb, err)
	}
	b, jerr := json.Marshal(struct{ Err error }{err})
	out["json"] = string(b) + fmt.Sprint(jerr)
	return out
}

// connectorOutputs opens a Connector on cfg with a logger of its own, pings
// it once through database/sql (one attempt, bounded by timeout), and
// returns the outputs a program or an operator sees: the ping's error, the
// Connector's Stats (printed and as JSON), its health report and readiness
// (JSON), its log lines and the Connector printed; and the ping's error.
// It returns NewConnector's error, if any, instead.
func connectorOutputs(t *testing.T, cfg Config, timeout time.Duration) (out map[string]string, pingErr, err error) {
	t.Helper()
	logs := &syncWriter{w: new(bytes.Buffer)}
	cfg.Pool.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.Pool.CreateTimeout = timeout
	cfg.Resilience.Retry.MaxAttempts = 1
	c, err := NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	pingErr = db.PingContext(ctx)
	cancel()
	out = map[string]string{}
	if pingErr == nil {
		t.Errorf("Ping of %s: no error", cfg)
		return out, nil, nil
	}
	for how, s := range errorOutputs(pingErr) {
		out["Ping error "+how] = s
	}
	st := c.Stats()
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		out["Stats "+verb] = fmt.Sprintf(verb, st)
	}
	b, jerr := json.Marshal(st)
	out["Stats json"] = string(b) + fmt.Sprint(jerr)
	checker, err := health.New(health.Config{})
	if err == nil {
		err = checker.Add("p", health.FromConnector(c, db.PingContext))
	}
	if err != nil {
		t.Errorf("health: %v", err)
		return out, pingErr, nil
	}
	b, jerr = json.Marshal(checker.Report())
	out["health report"] = string(b) + fmt.Sprint(jerr)
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	b, jerr = json.Marshal(checker.Ready(ctx))
	cancel()
	out["health readiness"] = string(b) + fmt.Sprint(jerr)
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		out["Connector "+verb] = fmt.Sprintf(verb, c)
	}
	_ = db.Close()
	out["log"] = logs.String()
	return out, pingErr, nil
}

// secretsTestPassword is the password of the examples.
const secretsTestPassword = "S3cr@t#Pw/1"

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestSecretsOfMalformedDSNsStayOut is issue 19 item 15: a DSN whose
// password is well written but whose port pgx cannot read. pgx's
// *pgconn.ParseConfigError keeps the whole DSN in its ConnString; the
// error the caller gets, the Stats (json.Marshal too), the health report
// and the log must not show the password, and errors.As must still find
// pgx's error.
func TestSecretsOfMalformedDSNsStayOut(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:S3cr%40t%23Pw%2F1@127.0.0.1:5432x/app",
		`host=127.0.0.1 port=5432x user=app password='S3cr@t#Pw/1' dbname=app`,
	} {
		t.Run(dsn, func(t *testing.T) {
			cfg, err := ParseDSN(dsn)
			if err != nil {
				t.Fatalf("ParseDSN: %v", err)
			}
			out, pingErr, err := connectorOutputs(t, *cfg, time.Second)
			if err != nil || pingErr == nil {
				t.Fatalf("NewConnector: %v; Ping: %v, want an error", err, pingErr)
			}
			for how, s := range out {
				if f := fragmentOf(s, secretsTestPassword); f != "" {
					t.Errorf("%s shows %q of the password: %s", how, f, s)
				}
			}
			var pce *pgconn.ParseConfigError
			if !errors.As(pingErr, &pce) {
				t.Errorf("errors.As does not find pgx's *pgconn.ParseConfigError in %v", pingErr)
			}
		})
	}
}

// TestSecretsOfOddPasswordsRedacted is issue 19 item 16: a password that
// starts with '/' (no parser reads it as a password), and a query password
// holding "&key=value".
func TestSecretsOfOddPasswordsRedacted(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app",
		"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app?sslmode=disable",
	} {
		cfg := &Config{DriverName: "pgx", DSN: dsn}
		for how, s := range configOutputs(cfg) {
			if f := fragmentOf(s, "/S3cr?t#Pw1"); f != "" {
				t.Errorf("%s of %q shows %q of the password: %s", how, dsn, f, s)
			}
		}
	}
	dsn := "postgres://app@127.0.0.1:5432/app?password=S3cr@t&Pw=1xyz"
	if got := RedactDSN(dsn); fragmentOf(got, "S3cr@t&Pw=1xyz") != "" {
		t.Errorf("RedactDSN(%q) = %q", dsn, got)
	}
}

// TestSecretsUnencodedURLPasswordRefused is issue 19 item 17: a URL password
// with an unencoded '@' or '/' cannot be carried by the URL form; pgx reads
// part of it as the host ("lookup t#Pw: no such host"). ParseDSN and
// NewConnector refuse it with an error that says to percent-encode it and
// shows no piece of it.
func TestSecretsUnencodedURLPasswordRefused(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:" + secretsTestPassword + "@localhost:5432/app",
		"postgres://app:/S3cr?t#Pw1@127.0.0.1:5432/app?sslmode=disable",
		"postgres://app@localhost:5432/app?password=S3cr@t=Pw/1",
	} {
		_, err := ParseDSN(dsn)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "percent-encode") {
			t.Errorf("ParseDSN(%q) = %v, want ErrInvalidConfig saying to percent-encode", dsn, err)
		}
		_, err = NewConnector(Config{DriverName: "pgx", DSN: dsn})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "percent-encode") {
			t.Errorf("NewConnector(%q) = %v, want ErrInvalidConfig saying to percent-encode", dsn, err)
		}
		for _, pw := range []string{secretsTestPassword, "/S3cr?t#Pw1", "S3cr@t=Pw/1"} {
			if f := fragmentOf(fmt.Sprint(err), pw); f != "" && strings.Contains(dsn, pw) {
				t.Errorf("the error of %q shows %q of the password: %v", dsn, f, err)
			}
		}
	}
}

// TestSecretsFragmentsBetweenAnySeparators is issue 19 item 17: pgx reads
// the host of "postgres://app:S3cr@t#Pw/1@..." as "t#Pw", a piece of the
// password between two separators with a third inside it; an error that
// shows it is redacted.
func TestSecretsFragmentsBetweenAnySeparators(t *testing.T) {
	for _, dsn := range []string{
		"app:S3cr@t#Pw/1@tcp(127.0.0.1:3306)/app",
		"host=h user=app password='S3cr@t#Pw/1'",
	} {
		err := secretsOf(dsn).Redact(errors.New("lookup t#Pw: no such host; user S3cr; db 1@127.0.0.1"))
		if f := fragmentOf(err.Error(), secretsTestPassword); f != "" {
			t.Errorf("%q: %v shows %q", dsn, err, f)
		}
	}
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// secretsOf returns the secrets of dsn as a Connector made from it keeps
// them (before the passwords its driver's parser reads): none when the DSN
// cannot be read.
func secretsOf(dsn string) dsnform.Secrets {
	text, err := dsnform.Read(dsn, dsnKeyPrefix)
	if err != nil {
		return nil
	}
	return text.Secrets
}

// TestSecretsFromTheBeforeConnectHookRedacted: a password that
// PgxBeforeConnect or MySQLBeforeConnect sets is redacted like the DSN's
// wherever respool shows an attempt's error: the caller's error, Stats,
// the health report, the log, the Connector and its Config printed, even
// when the hook's own error quotes it (a token provider's message), and
// when the attempt goes on to a server that is not there.
func TestSecretsFromTheBeforeConnectHookRedacted(t *testing.T) {
	addr := closedAddr(t)
	for _, hookFails := range []bool{true, false} {
		for _, cfg := range []Config{
			{DriverName: "pgx", DSN: "postgres://app@" + addr + "/app?sslmode=disable",
				PgxBeforeConnect: func(_ context.Context, cc *pgx.ConnConfig) error {
					cc.Password = secretsTestPassword
					if hookFails {
						return fmt.Errorf("token %s expired", cc.Password)
					}
					return nil
				}},
			{DriverName: "mysql", DSN: "app@tcp(" + addr + ")/app",
				MySQLBeforeConnect: func(_ context.Context, mc *mysql.Config) error {
					mc.Passwd = secretsTestPassword
					if hookFails {
						return fmt.Errorf("token %s expired", mc.Passwd)
					}
					return nil
				}},
		} {
			t.Run(fmt.Sprintf("%s/hook fails %v", cfg.DriverName, hookFails), func(t *testing.T) {
				out, pingErr, err := connectorOutputs(t, cfg, time.Second)
				if err != nil || pingErr == nil {
					t.Fatalf("NewConnector: %v; Ping: %v, want an error", err, pingErr)
				}
				out["Config %v"], out["Config %#v"] = fmt.Sprintf("%v", cfg), fmt.Sprintf("%#v", cfg)
				for how, s := range out {
					if f := fragmentOf(s, secretsTestPassword); f != "" {
						t.Errorf("%s shows %q of the password: %s", how, f, s)
					}
				}
				if hookFails && !strings.Contains(pingErr.Error(), "token xxxxx expired") {
					t.Errorf("Ping: %v; want the hook's error, redacted", pingErr)
				}
			})
		}
	}
}
