package dsnform

import (
	"errors"
	"fmt"
	"strings"
)

// What a form cannot carry as written. Each error says how to encode the
// password and shows none of it.
var (
	errURLAt = errors.New(`URL form: an "@" follows the user information (in a host, port, database name or ` +
		`query element): percent-encode the password and the user ("@" as %40, "/" as %2F, "?" as %3F, "#" as %23; ` +
		`url.UserPassword does), and an "@" in a database name as %40`)
	errURLPassword = errors.New(`URL form: the password holds a space or a "%" that does not start two hex digits: ` +
		`percent-encode it: " " as %20, "%" as %25 (url.UserPassword does)`)
)

// carried returns an error when a password of the DSN is written so that
// its form cannot carry it: the driver would read part of it as a host, a
// path or another parameter, or refuse it and show a piece of it.
//
//   - URL: an '@' after the user information as libpq and pgx read it
//     (the first '@' before any '/'), in a host, port or path, or in a
//     query element that is not key=value with a key of letters, digits,
//     '_', '.' and '-': a password (or user) holding an '@' or a '/'; a
//     password or a password-like query value that pgx cannot decode (a
//     space inside it, a '%' not followed by two hex digits, %00); a
//     password-like query value holding '=', or followed by an element
//     without '=' or with such a key (a password holding '&').
//   - keyword/value: an unquoted password-like value followed by an
//     element whose keyword is not letters, digits, '_', '.' and '-' (a
//     password holding a space).
//
// The mysql form carries any password: go-sql-driver/mysql ends it at the
// last '@' before the last '/'.
func (t *tokens) carried() error {
	switch t.form {
	case URL:
		if t.hosts.at {
			return errURLAt
		}
		for _, e := range t.elems {
			if strings.IndexByte(t.s[e.start:e.end], '@') >= 0 && (e.eqs == 0 || !IsKeyword(e.key)) {
				return errURLAt
			}
		}
		if t.userEnd >= 0 {
			if _, pw, ok := strings.Cut(t.s[t.userFrom:t.userEnd], ":"); ok && !urlDecodes(pw) {
				return errURLPassword
			}
		}
		return t.queryCarried()
	case KV:
		for i, e := range t.elems {
			if IsSecretKey(e.key) && !e.quoted && i+1 < len(t.elems) && !IsKeyword(t.elems[i+1].key) {
				return fmt.Errorf("keyword/value form: element %d follows the unquoted value of %s and is not keyword=value: "+
					`single-quote a value that holds spaces: %s='a b', with \' and \\ inside escaped`, i+2, Quote(e.key), e.key)
			}
		}
	}
	return nil
}

// queryCarried checks the password-like values of a URL's query.
func (t *tokens) queryCarried() error {
	for i, e := range t.elems {
		if !IsSecretKey(e.key) || e.valStart < 0 {
			continue
		}
		raw := t.s[e.valStart:e.end]
		bad := e.eqs > 1 || !urlDecodes(raw)
		if next := i + 1; !bad && next < len(t.elems) {
			n := t.elems[next]
			bad = n.eqs == 0 || !IsKeyword(n.key)
		}
		if bad {
			return fmt.Errorf(`URL form: the value of query parameter %s holds "&", "=", a space or a "%%" `+
				`that does not start two hex digits: percent-encode it: "&" as %%26, "=" as %%3D, " " as %%20, "%%" as %%25 `+
				`(url.QueryEscape does)`, Quote(e.key))
		}
	}
	return nil
}

// IsKeyword reports whether k is not empty and made of the bytes of a
// libpq keyword (letters, digits, '_', '.', '-'): the keys every driver
// uses. A key with other bytes is a piece of something else, such as a
// password holding a separator.
func IsKeyword(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !IsKeywordByte(k[i]) {
			return false
		}
	}
	return true
}
