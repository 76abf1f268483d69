package health

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// adminBodyLimit bounds the body of an admin request: two small integers.
const adminBodyLimit = 1 << 10

// adminResult is the JSON answer of an admin endpoint.
type adminResult struct {
	Source     string `json:"source"`
	Action     string `json:"action"`
	MaxObjects *int   `json:"max_objects,omitempty"` // resize: the size in force
	MinIdle    *int   `json:"min_idle,omitempty"`
}

// adminSource returns the source the request names, or answers 404.
func (c *Checker) adminSource(w http.ResponseWriter, r *http.Request, action string, has func(Source) bool) (string, Source, bool) {
	name := r.PathValue("source")
	c.mu.RLock()
	s, ok := c.sources[name]
	c.mu.RUnlock()
	switch {
	case !ok:
		adminError(w, http.StatusNotFound, fmt.Sprintf("health: %s: no source %q", action, name))
	case !has(s):
		adminError(w, http.StatusNotFound, fmt.Sprintf("health: %s: source %q has no %s", action, name, action))
	default:
		return name, s, true
	}
	return "", Source{}, false
}

func (c *Checker) adminReset(w http.ResponseWriter, r *http.Request) {
	name, s, ok := c.adminSource(w, r, "reset", func(s Source) bool { return s.Reset != nil })
	if !ok {
		return
	}
	s.Reset()
	writeJSON(w, http.StatusOK, adminResult{Source: name, Action: "reset"})
}

func (c *Checker) adminResize(w http.ResponseWriter, r *http.Request) {
	name, s, ok := c.adminSource(w, r, "resize", func(s Source) bool { return s.Resize != nil })
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, adminBodyLimit)
	maxObjects, err1 := formInt(r, "max")
	minIdle, err2 := formInt(r, "min_idle")
	if err := cmp.Or(err1, err2); err != nil {
		adminError(w, http.StatusBadRequest, fmt.Sprintf("health: resize %q: %v", name, err))
		return
	}
	if err := s.Resize(maxObjects, minIdle); err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.As(err, new(*resilience.ConfigError)):
			status = http.StatusBadRequest
		case errors.Is(err, pool.ErrClosed):
			status = http.StatusConflict
		}
		adminError(w, status, fmt.Sprintf("health: resize %q: %s", name, c.redact(err.Error())))
		return
	}
	size := s.Stats().MaxObjects
	writeJSON(w, http.StatusOK, adminResult{Source: name, Action: "resize", MaxObjects: &size, MinIdle: &minIdle})
}

// formInt reads the integer value key of r's form (body or query).
func formInt(r *http.Request, key string) (int, error) {
	v := r.FormValue(key)
	if v == "" {
		return 0, fmt.Errorf("%s is required: an integer", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s = %.32q: want an integer", key, v)
	}
	return n, nil
}

func adminError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}
