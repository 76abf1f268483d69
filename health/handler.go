package health

import (
	"encoding/json"
	"net/http"
)

// Handler serves, for GET and HEAD:
//
//   - Config.LivePath (/livez): 200 "ok" while the process answers, whatever
//     the pools' state;
//   - Config.ReadyPath (/readyz): the Readiness as JSON, 200 when ready,
//     503 when not (each probe bounded by Config.ProbeTimeout and the
//     request's context);
//   - Config.ReportPath (/health): the Report as JSON, 200.
//
// With Config.AdminPath set (off by default), it serves for POST only:
//
//   - AdminPath/{source}/reset: Source.Reset; 200 and
//     {"source":…,"action":"reset"};
//   - AdminPath/{source}/resize with the form or query values max and
//     min_idle (both integers, both required): Source.Resize; 200 and the
//     size in force ({"source":…,"action":"resize","max_objects":…,
//     "min_idle":…}).
//
// An unknown source, or one without Reset or Resize, gets 404; a missing or
// malformed value, or one Resize refuses, 400 naming it and what is
// accepted; a closed pool 409. Errors are JSON {"error":…}.
//
// Other paths get 404, other methods 405. Mount it at the root or under a
// prefix with http.StripPrefix.
func (c *Checker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+c.cfg.LivePath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+c.cfg.ReadyPath, func(w http.ResponseWriter, r *http.Request) {
		rd := c.Ready(r.Context())
		status := http.StatusOK
		if !rd.Ready {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, rd)
	})
	mux.HandleFunc("GET "+c.cfg.ReportPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, c.Report())
	})
	if c.cfg.AdminPath != "" {
		mux.HandleFunc("POST "+c.cfg.AdminPath+"/{source}/reset", c.adminReset)
		mux.HandleFunc("POST "+c.cfg.AdminPath+"/{source}/resize", c.adminResize)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "health: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
