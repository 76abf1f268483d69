package dsnform

import (
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

// RedactError returns err with every one of secrets (longest first)
// replaced by Redacted. An error that shows none is returned as it is;
// otherwise the original stays reachable through Unwrap, so errors.Is and
// errors.As keep working.
func RedactError(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	redacted := msg
	for _, secret := range secrets {
		redacted = strings.ReplaceAll(redacted, secret, Redacted)
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
