package pool

import (
	"encoding/json"
	"fmt"
)

// lastCreateError is Stats.LastCreateError: the factory's error, wrapped so
// that Stats marshal to JSON. An error marshals as its exported fields,
// which may hold what JSON cannot (pgx's *pgconn.ConnectError holds its
// config's funcs: "json: unsupported type") and what no report should
// show (that config's password); this one marshals as its message, the
// text its driver writes for people. It prints as the error does, and
// errors.Is and errors.As see the error through Unwrap.
type lastCreateError struct{ err error }

func (e *lastCreateError) Error() string { return e.err.Error() }
func (e *lastCreateError) Unwrap() error { return e.err }

// Format prints the error as it prints itself, for every verb.
func (e *lastCreateError) Format(f fmt.State, verb rune) {
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), e.err)
}

// MarshalJSON writes the error's message as a JSON string.
func (e *lastCreateError) MarshalJSON() ([]byte, error) { return json.Marshal(e.err.Error()) }
