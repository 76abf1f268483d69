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
