// Command cellar runs the Cellar server: a Redis-compatible server that keeps
// every byte in SQLite. Run it with no flags for the embedded default
// (127.0.0.1:6379, data in ./data/cellar.db); see --help and
// deploy/cellar.yaml for every setting.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/rs/zerolog/diode"

	"github.com/cellar-db/cellar"
)

func main() { os.Exit(run(os.Args[1:])) }

// stderr writes to os.Stderr but has no Close: the diode closes the writer
// it wraps, and the process still needs stderr for its last words.
type stderr struct{}

func (stderr) Write(p []byte) (int, error) { return os.Stderr.Write(p) }

func run(args []string) int {
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheck(args[1:])
	}
	if len(args) > 0 && args[0] == "migrate" {
		return migrate(args[1:])
	}
	var usage strings.Builder
	cfg, err := cellar.LoadConfig(args, os.Environ(), &usage)
	switch {
	case errors.Is(err, cellar.ErrHelp):
		fmt.Print(usage.String())
		return 0
	case errors.Is(err, cellar.ErrVersion):
		fmt.Printf("cellar %s (Redis %s compatible)\n", cellar.Version, "7.0")
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "cellar: %v\n", err)
		var ce *cellar.ConfigError
		if errors.As(err, &ce) {
			return 2
		}
		return 1
	}

	// A diode keeps a slow stderr from ever blocking the loops or the actor;
	// if it overflows, lines are dropped and the count is logged.
	out := diode.NewWriter(stderr{}, 10000, 0, func(missed int) {
		fmt.Fprintf(os.Stderr, "cellar: log writer dropped %d messages\n", missed)
	})
	defer out.Close()
	log := cellar.NewLogger(cfg, zerolog.LevelWriterAdapter{Writer: out})

	// Go samples an allocation in every 512 KiB for heap profiles and
	// keeps each sample's stack (1.5 MiB and more with a large keyspace);
	// only the pprof endpoints read them, so without those none is kept.
	if cfg.DebugAddr == "" && !(cfg.HTTP.Enabled && cfg.HTTP.Pprof) {
		runtime.MemProfileRate = 0
	}
	// Go's collector lets the heap grow to twice what is live; bound it by
	// what the settings budget instead (unless GOMEMLIMIT says otherwise).
	if limit := cfg.GoMemoryLimit(); limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
		cfg.ManageGoMemory = true
	}
	// And it lets the heap grow by as much again as is live, which for a
	// large keyspace doubles the process; the actor lowers that as the
	// keyspace grows (unless GOGC says otherwise).
	cfg.ManageGCPercent = os.Getenv("GOGC") == ""
	srv, err := cellar.Start(cfg, log)
	if err != nil {
		log.Error().Err(err).Msg("cannot start")
		out.Close()
		fmt.Fprintf(os.Stderr, "cellar: %v\n", err)
		return 1
	}
	if err := sdNotify("READY=1"); err != nil {
		log.Warn().Err(err).Msg("cannot notify systemd")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	code := 0
wait:
	for {
		select {
		case s := <-sig:
			if srv.ShutdownPending() {
				if s == syscall.SIGINT {
					// As Redis: a second SIGINT stops without waiting for
					// the replicas, and the exit status says so.
					log.Warn().Msg("You insist... exiting now.")
					code = 1
					break wait
				}
				continue // a shutdown waits for replicas already
			}
			log.Info().Str("signal", s.String()).Msg("shutting down")
			sdNotify("STOPPING=1")
			// Not ready first, so a load balancer stops sending clients,
			// then the shutdown, which waits for lagging replicas as
			// SHUTDOWN does (SHUTDOWN ABORT cancels it), then the graceful
			// stop (docs/architecture.md, "Shutdown").
			srv.Drain()
			if d := cfg.HTTP.DrainDelay; d > 0 && cfg.HTTP.Enabled {
				log.Info().Dur("drain_delay", d).Msg("draining: /readyz answers 503")
				select {
				case <-time.After(d):
				case <-sig: // a second signal stops at once
					break wait
				case <-srv.Done():
					break wait
				}
			}
			srv.RequestShutdown(s == syscall.SIGINT)
		case <-srv.Done():
			break wait
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error().Err(err).Msg("shutdown")
		return 1
	}
	return code
}
