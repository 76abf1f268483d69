package resil

import "github.com/respool/respool/resilience"

// Check returns a *resilience.ConfigError for field unless ok.
func Check(ok bool, mechanism, field string, value any, accepted string) error {
	if ok {
		return nil
	}
	return &resilience.ConfigError{Mechanism: mechanism, Field: field, Value: value, Accepted: accepted}
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
