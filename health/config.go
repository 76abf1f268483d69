package health

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of the zero Config.
const (
	DefaultProbeTimeout = time.Second
	DefaultLivePath     = "/livez"
	DefaultReadyPath    = "/readyz"
	DefaultReportPath   = "/health"
)

// DefaultQuantiles are the acquire-wait quantiles of a report.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99}

// Config configures a Checker. Every zero value means the default written
// beside it; New validates it.
type Config struct {
	// ProbeTimeout bounds each source's Probe in a readiness check: a
	// source that cannot hand out an object within it is not ready.
	// Zero means DefaultProbeTimeout (1s).
	ProbeTimeout time.Duration
	// Quantiles are the acquire-wait quantiles reported, each in (0, 1].
	// Nil means DefaultQuantiles (0.5, 0.9, 0.99).
	Quantiles []float64
	// Redact, when set, is applied to every error text after the package's
	// own Redact: for secrets of your own.
	Redact func(string) string
	// Now is the time of reports. Nil means time.Now.
	Now func() time.Time
	// LivePath, ReadyPath and ReportPath are the Handler's paths; each must
	// begin with '/' and differ from the others. Empty means
	// DefaultLivePath (/livez), DefaultReadyPath (/readyz) and
	// DefaultReportPath (/health).
	LivePath, ReadyPath, ReportPath string
}

// ConfigError names a Config field whose value is not accepted.
type ConfigError struct {
	Field  string
	Value  any
	Reason string // what is accepted
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("health: invalid Config.%s = %v: %s", e.Field, e.Value, e.Reason)
}

// withDefaults validates c and returns it with its defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if c.ProbeTimeout < 0 {
		return c, &ConfigError{"ProbeTimeout", c.ProbeTimeout, "must be 0 (default 1s) or positive"}
	}
	for _, q := range c.Quantiles {
		if !(q > 0 && q <= 1) {
			return c, &ConfigError{"Quantiles", c.Quantiles, "each must be in (0, 1]"}
		}
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.Quantiles == nil {
		c.Quantiles = DefaultQuantiles
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	paths := []struct {
		field string
		p     *string
		def   string
	}{{"LivePath", &c.LivePath, DefaultLivePath}, {"ReadyPath", &c.ReadyPath, DefaultReadyPath}, {"ReportPath", &c.ReportPath, DefaultReportPath}}
	seen := map[string]string{}
	for _, f := range paths {
		if *f.p == "" {
			*f.p = f.def
		}
		if !strings.HasPrefix(*f.p, "/") {
			return c, &ConfigError{f.field, *f.p, "must begin with '/'"}
		}
		if other, ok := seen[*f.p]; ok {
			return c, &ConfigError{f.field, *f.p, "must differ from " + other}
		}
		seen[*f.p] = f.field
	}
	return c, nil
}
