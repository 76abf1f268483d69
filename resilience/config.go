package resilience

import "fmt"

// ConfigError reports a Config field whose value is not accepted.
type ConfigError struct {
	Mechanism string // "breaker", "retry", ...
	Field     string // the Config field, as spelled in Go
	Value     any
	Accepted  string // what would be accepted
}

// Error names the mechanism, the field, the value and what is accepted.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: Config.%s = %v: want %s", e.Mechanism, e.Field, e.Value, e.Accepted)
}

// Check returns a ConfigError for field unless ok.
func Check(ok bool, mechanism, field string, value any, accepted string) error {
	if ok {
		return nil
	}
	return &ConfigError{Mechanism: mechanism, Field: field, Value: value, Accepted: accepted}
}

// FirstError returns the first non-nil of errs: a Config's validate lists
// its Checks and reports the first that fails.
func FirstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
