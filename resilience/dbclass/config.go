package dbclass

import (
	"errors"
	"fmt"
	"time"
)

// Defaults for Config's zero values.
const (
	// DefaultPause is the pause after a "server is full" error. No
	// database says how long to wait, and a slot frees when some other
	// session ends, so the pause is long enough that a pool above the
	// server's limit makes about one attempt a second, and short against
	// typical request deadlines. A pause mechanism that escalates on
	// repeated signals stretches it further.
	DefaultPause = time.Second
	// DefaultStartupPause is the pause after 57P03 cannot_connect_now. A
	// starting server typically accepts within a fraction of a second, so
	// waiting long would delay recovery after a restart.
	DefaultStartupPause = 100 * time.Millisecond
)

// Config chooses the pause d of back-pressure errors. Its zero value is the
// documented defaults.
type Config struct {
	// Pause is d for the errors that say the server is full:
	// PostgreSQL 53300 too_many_connections and 53400
	// configuration_limit_exceeded; MySQL 1040 too many connections, 1203
	// max_user_connections, 1226 user resource exceeded, 1135 cannot
	// create thread. Zero means DefaultPause (1s).
	Pause time.Duration
	// StartupPause is d for PostgreSQL 57P03 cannot_connect_now: the
	// server is starting, shutting down or recovering. Zero means
	// DefaultStartupPause (100ms).
	StartupPause time.Duration
}

// ErrInvalidConfig is returned (wrapped) by New for a Config it cannot use.
var ErrInvalidConfig = errors.New("dbclass: invalid config")

// Classifier classifies errors with one Config. It is immutable and safe
// for concurrent use.
type Classifier struct {
	pause, startupPause time.Duration
}

// New returns a Classifier for cfg, or an error wrapping ErrInvalidConfig
// that names the bad field and value.
func New(cfg Config) (*Classifier, error) {
	if cfg.Pause < 0 {
		return nil, fmt.Errorf("%w: Pause %v: must be zero (default %v) or positive", ErrInvalidConfig, cfg.Pause, DefaultPause)
	}
	if cfg.StartupPause < 0 {
		return nil, fmt.Errorf("%w: StartupPause %v: must be zero (default %v) or positive", ErrInvalidConfig, cfg.StartupPause, DefaultStartupPause)
	}
	c := &Classifier{pause: cfg.Pause, startupPause: cfg.StartupPause}
	if c.pause == 0 {
		c.pause = DefaultPause
	}
	if c.startupPause == 0 {
		c.startupPause = DefaultStartupPause
	}
	return c, nil
}

// defaultClassifier serves the package-level functions.
var defaultClassifier = &Classifier{pause: DefaultPause, startupPause: DefaultStartupPause}
