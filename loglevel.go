package cellar

import (
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/cellar-db/cellar/actor"
)

// logGate is the run-time level of the server's logger, which CONFIG SET
// loglevel changes. zerolog fixes a logger's level in every copy of it,
// so the server logs at Debug (or the lower level it was given) and the
// gate, a hook, discards what is below the level set now.
type logGate struct {
	min atomic.Int32 // a zerolog.Level
	// word is the level in Redis's words (debug, verbose, notice,
	// warning), as CONFIG GET loglevel answers; actor goroutine only.
	word string
}

// newLogGate starts at the given logger's level; word names it as
// configured, in Redis's words (Cellar's info is Redis's notice, warn
// and error are warning).
func newLogGate(configured string, lvl zerolog.Level) *logGate {
	g := &logGate{}
	g.min.Store(int32(lvl))
	switch w := strings.ToLower(configured); w {
	case "debug", "verbose", "notice", "warning":
		g.word = w
	case "info":
		g.word = "notice"
	default:
		g.word = "warning"
	}
	return g
}

// Run discards an event below the gate's level.
func (g *logGate) Run(e *zerolog.Event, lvl zerolog.Level, _ string) {
	if lvl < zerolog.Level(g.min.Load()) {
		e.Discard()
	}
}

// wrap returns log logging through the gate.
func (g *logGate) wrap(log zerolog.Logger) zerolog.Logger {
	if log.GetLevel() >= zerolog.Disabled {
		return log
	}
	return log.Level(min(zerolog.DebugLevel, log.GetLevel())).Hook(g)
}

// param is loglevel for CONFIG GET and SET: Redis's values, mapped onto
// zerolog's levels (debug and verbose are Debug, notice Info, warning
// Warn).
func (g *logGate) param() actor.Param {
	levels := map[string]zerolog.Level{"debug": zerolog.DebugLevel, "verbose": zerolog.DebugLevel,
		"notice": zerolog.InfoLevel, "warning": zerolog.WarnLevel}
	return actor.Param{Name: "loglevel", Get: func() string { return g.word }, Set: func(v string) error {
		w, err := actor.NormalizeParam("loglevel", v)
		if err != nil {
			return err
		}
		g.word = w
		g.min.Store(int32(levels[w]))
		return nil
	}}
}
