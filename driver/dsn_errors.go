package driver

import (
	"errors"
	"strings"

	"github.com/respool/respool/internal/dsnform"
)

var (
	// ErrInvalidDSN is matched (errors.Is) by every error ParseDSN returns:
	// each *DSNError, and the errors for a DSN whose structure cannot be read
	// (an unterminated quote, an unterminated "[" in a URL host).
	ErrInvalidDSN = errors.New("respool: invalid DSN")
	// ErrInvalidConfig is matched (errors.Is) by every error Config.Validate
	// returns. When the pool configuration is at fault, errors.As also finds
	// the *pool.ConfigError that names the field.
	ErrInvalidConfig = errors.New("respool: invalid Config")
)

// DSNError reports a respool key of a DSN that is not accepted: an unknown
// respool_ key, a value that does not parse or is out of range, or a key given
// twice. errors.Is(err, ErrInvalidDSN) is true for it.
//
// It never holds the DSN or its password: only the respool key and its value,
// which are never secrets.
type DSNError struct {
	// Key is the respool key as written (percent-decoded in the URL and
	// mysql forms).
	Key string
	// Value is the key's value, decoded as ParseDSN reads it (percent-decoded,
	// or unquoted in the keyword/value form); raw when it could not be
	// decoded.
	Value string
	// Accepted says what the key accepts, for example "an integer ≥ 1". It is
	// empty for an unknown key.
	Accepted string
	// Suggestion is, for an unknown key, the valid key closest to it, or
	// empty when none is close.
	Suggestion string
	// Duplicate is true when Key appears more than once; Value is then its
	// second value.
	Duplicate bool
}

func (e *DSNError) Error() string {
	var b strings.Builder
	switch {
	case e.Duplicate:
		b.WriteString("respool: DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		b.WriteString(" is given more than once: want it at most once")
	case e.Accepted == "":
		b.WriteString("respool: unknown DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		if e.Suggestion != "" {
			b.WriteString(" (did you mean ")
			b.WriteString(dsnform.Quote(e.Suggestion))
			b.WriteString("?)")
		} else {
			b.WriteString("; valid keys: ")
			b.WriteString(strings.Join(dsnKeyNames(), ", "))
		}
	default:
		b.WriteString("respool: DSN key ")
		b.WriteString(dsnform.Quote(e.Key))
		b.WriteString(" has invalid value ")
		b.WriteString(dsnform.Quote(e.Value))
		b.WriteString(": want ")
		b.WriteString(e.Accepted)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidDSN) true.
func (e *DSNError) Is(target error) bool { return target == ErrInvalidDSN }
