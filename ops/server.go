package ops

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/actor"
	"github.com/cellar-db/cellar/offload"
)

// Config is the HTTP port's settings (the http: section of cellar.yaml).
type Config struct {
	Addr string // host:port; port 0 picks a free one
	// Pprof serves Go's profiles under /debug/pprof/.
	Pprof bool
	// HealthTimeout is how long /healthz and /metrics wait for the actor.
	HealthTimeout time.Duration
}

// Server is the HTTP port.
type Server struct {
	cfg  Config
	act  *actor.Actor
	pool *offload.Pool
	log  zerolog.Logger
	http *http.Server
	ln   net.Listener

	// ready: accepting clients; draining: SIGTERM or SHUTDOWN began.
	ready, draining atomic.Bool
}

// New makes the HTTP server; Start listens.
func New(cfg Config, act *actor.Actor, pool *offload.Pool, log zerolog.Logger) *Server {
	if cfg.HealthTimeout <= 0 {
		cfg.HealthTimeout = time.Second
	}
	s := &Server{cfg: cfg, act: act, pool: pool, log: log}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{s: s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "cellar"}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: promLogger{log}, Timeout: 2 * cfg.HealthTimeout}))
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/readyz", s.readyz)
	if cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Start listens on the configured address and serves in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error().Err(err).Msg("http port")
		}
	}()
	return nil
}

// Addr is where the port listens (after Start).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// SetReady marks Cellar as accepting clients (after the loops listen).
func (s *Server) SetReady() { s.ready.Store(true) }

// Drain makes /readyz answer 503 from now on, so that load balancers and
// Kubernetes stop sending new clients before the listener closes.
func (s *Server) Drain() { s.draining.Store(true) }

// Undrain makes /readyz answer as before Drain (a shutdown was aborted).
func (s *Server) Undrain() { s.draining.Store(false) }

// Close stops serving.
func (s *Server) Close() error { return s.http.Close() }

// healthz: the process is alive and the actor answers within the
// deadline (a stuck actor, or one held by a long script, fails it).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.HealthTimeout)
	defer cancel()
	if err := s.act.Ping(ctx); err != nil {
		http.Error(w, "not healthy: the actor does not answer", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// readyz: accepting clients, storage writable, not shutting down. (Cellar
// replays its log before it listens, so it is never ready while loading.)
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	var why string
	switch {
	case s.draining.Load():
		why = "shutting down"
	case !s.ready.Load():
		why = "starting"
	case !s.act.Writable():
		why = "storage not writable (an fsync or a log write failed)"
	}
	if why != "" {
		http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// promLogger routes promhttp's errors to the server's log.
type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) { l.log.Warn().Msgf("metrics: %v", v...) }
