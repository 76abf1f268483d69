package dsnform

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Quote quotes s like %q, cut short, so that a key or value in an error
// cannot forge log lines or flood them.
func Quote(s string) string {
	const limit = 200 // a key's value is short; do not echo megabytes
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return strconv.Quote(s)
}

// ParseBool reads a boolean DSN value: true, on or 1; false, off or 0; in
// any case.
func ParseBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "true", "on", "1":
		return true, true
	case "false", "off", "0":
		return false, true
	}
	return false, false
}

// Redacted is what replaces a password.
const Redacted = "xxxxx"

// Redact returns err redacted of s. An error that shows none of s in any
// way a program prints it (its message, %+v, %#v, JSON) is returned as it
// is, so that type assertions keep working; any other is wrapped in an
// error whose message has each of s (longest first) replaced by Redacted,
// and which prints (every fmt verb) and marshals to JSON as that message
// only. Such an error is pgconn's *ParseConfigError, whose message pgx
// redacts as best it can but whose ConnString field, which %#v and JSON
// show, is the whole DSN. The original stays reachable through Unwrap, so
// errors.Is and errors.As keep working.
func (s Secrets) Redact(err error) error {
	if err == nil || len(s) == 0 {
		return err
	}
	msg := err.Error()
	redacted := msg
	for _, secret := range s {
		redacted = strings.ReplaceAll(redacted, secret, Redacted)
	}
	if redacted == msg && !s.shownBy(err) {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

// shownBy reports whether err printed with %+v or %#v, or marshalled to
// JSON, shows one of s.
func (s Secrets) shownBy(err error) bool {
	outputs := []string{fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
	if b, jerr := json.Marshal(err); jerr == nil {
		outputs = append(outputs, string(b))
	}
	for _, out := range outputs {
		for _, secret := range s {
			if strings.Contains(out, secret) {
				return true
			}
		}
	}
	return false
}

// redactedError is an error with its message redacted. It prints, with
// every verb, and marshals as that message alone.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Format prints the redacted message, as a string, for every verb: the
// fields are not printed, not even by %#v.
func (e *redactedError) Format(f fmt.State, verb rune) {
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), e.msg)
}

// MarshalJSON writes the redacted message as a JSON string.
func (e *redactedError) MarshalJSON() ([]byte, error) { return json.Marshal(e.msg) }

// textPatterns find passwords in free text (RedactText).
var (
	// scheme://user:password@host: the password runs to the last '@'
	// before the next space, as the widest reading of a DSN.
	textURLPassword = regexp.MustCompile(`(://[^:/@\s]*:)\S*@`)
	// user:password@net(addr) and user:password@/db, a mysql DSN without a
	// scheme: the password runs to the last '@' that such an address
	// follows; it does not start with "//" (that is a URL's).
	textMySQLPassword = regexp.MustCompile(`([^\s:@/'"\x60(]+:)(?:(?:[^/\s]|/[^/\s])\S*)?@(\w*\(|/)`)
	// KEY=value for each of SecretKeys, quoted or not.
	textKeyPassword = regexp.MustCompile(`(?i)\b(` + secretKeysPattern() + `)(\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;,)]*)`)
)

// secretKeysPattern returns SecretKeys as alternatives of a regexp,
// longest first.
func secretKeysPattern() string {
	keys := slices.Clone(SecretKeys)
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for i, k := range keys {
		keys[i] = regexp.QuoteMeta(k)
	}
	return strings.Join(keys, "|")
}

// RedactText returns s, a text such as an error message that may quote a
// DSN, with what reads as a password in it replaced by Redacted: the
// password of URL user information (scheme://user:password@host), of a
// mysql DSN without a scheme (user:password@tcp(host) or user:password@/db),
// and the value of each of SecretKeys (KEY=value, KEY='value'). It is best
// effort, a last line of defence for texts that no Secrets redacted.
func RedactText(s string) string {
	s = textURLPassword.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = textMySQLPassword.ReplaceAllString(s, "${1}"+Redacted+"@${2}")
	return textKeyPassword.ReplaceAllString(s, "${1}${2}"+Redacted)
}

// RedactURLPassword returns s, a URL such as a shared budget's, with the
// password of its user information replaced by Redacted: all that lies
// between the first ':' after "://" and the last '@', whatever it holds
// (spaces, '#', '/', bad escapes), so that no part of a password written
// unencoded is shown. A value without "://", '@' or a password is
// returned as is. An '@' later in the URL (in its query) makes it redact
// more than the password, never less.
func RedactURLPassword(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	colon := strings.Index(rest[:at], ":")
	if colon < 0 {
		return s
	}
	return s[:i+3] + rest[:colon+1] + Redacted + rest[at:]
}

// URLPasswordForms returns the password of s as RedactURLPassword finds it,
// as written and percent-decoded, for redacting texts that quote it (nil
// when s has none).
func URLPasswordForms(s string) []string {
	i := strings.Index(s, "://")
	if i < 0 {
		return nil
	}
	rest := s[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	colon := strings.Index(rest[:at], ":")
	if colon < 0 || colon+1 == at {
		return nil
	}
	pw := rest[colon+1 : at]
	forms := []string{pw}
	if d, err := url.PathUnescape(pw); err == nil && d != pw {
		forms = append(forms, d)
	}
	return forms
}
