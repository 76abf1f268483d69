package driver

import (
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// redactError returns err with every spelling of dsn's password (as
// written, decoded) replaced by "xxxxx". An error that shows none is returned
// as it is; otherwise the original stays reachable through Unwrap, so
// errors.Is and errors.As keep working.
func redactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	redacted := msg
	for _, secret := range secretsOf(dsn) {
		if len(secret) >= 3 { // shorter would mangle ordinary words
			redacted = strings.ReplaceAll(redacted, secret, dsnRedacted)
		}
	}
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// secretsOf returns the passwords in dsn, each as written and decoded, read
// with the parser of its form: net/url (user information and password-like
// query parameters), libpq's keyword/value rules, or go-sql-driver/mysql's
// ParseDSN.
func secretsOf(dsn string) []string {
	var out []string
	add := func(raw string, decode func(string) (string, error)) {
		out = append(out, raw)
		if dec, err := decode(raw); err == nil && dec != raw {
			out = append(out, dec)
		}
	}
	switch dsnFormOf(dsn) {
	case dsnFormURL:
		u, err := url.Parse(dsn)
		if err != nil {
			break
		}
		if u.User != nil {
			if _, raw, ok := strings.Cut(u.User.String(), ":"); ok {
				add(raw, url.PathUnescape)
			}
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			}
		}
		for _, kv := range strings.Split(u.RawQuery, "&") {
			if k, v, ok := strings.Cut(kv, "="); ok && dsnIsSecretKey(k) {
				add(v, url.QueryUnescape)
			}
		}
	case dsnFormKV:
		toks, _, _ := dsnKVTokens(dsn)
		for _, t := range toks {
			if dsnIsSecretKey(t.key) {
				out = append(out, t.value, dsn[t.valStart:t.end])
			}
		}
	case dsnFormMySQL:
		if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
			out = append(out, cfg.Passwd)
		}
	}
	return out
}
