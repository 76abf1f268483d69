package driver

import (
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// redactError returns err with the password of dsn, wherever it appears in
// err's message, replaced by "xxxxx". The original error stays reachable
// through Unwrap, so errors.Is and errors.As keep working.
func redactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	pw := passwordOf(dsn)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), pw, dsnRedacted), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// passwordOf returns the password in dsn, read with the parser of its form:
// net/url, libpq's keyword/value rules, or go-sql-driver/mysql's ParseDSN.
func passwordOf(dsn string) string {
	switch dsnFormOf(dsn) {
	case dsnFormURL:
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			pw, _ := u.User.Password()
			return pw
		}
	case dsnFormKV:
		toks, _, _ := dsnKVTokens(dsn)
		for _, t := range toks {
			if t.key == "password" {
				return t.value
			}
		}
	case dsnFormMySQL:
		if cfg, err := mysql.ParseDSN(dsn); err == nil {
			return cfg.Passwd
		}
	}
	return ""
}
