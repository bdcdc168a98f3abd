package actor

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Keys' access clocks, for OBJECT IDLETIME and OBJECT FREQ.
//
// Each key in memory has a word (storage.Store.AccessWord) that holds what
// Redis 7.0 keeps in an object's 24-bit lru field, the same bits: under an
// LRU (or no) maxmemory-policy, the key's last access on the LRU clock
// (seconds, modulo 2^24); under an LFU policy, the minute of the last
// decrement (16 bits) and a logarithmic access counter (8 bits). Like
// Redis, a policy switched at run time reads the bits the other policy
// left. Bit 24 marks a word as set: a key loaded into memory has 0, read
// as never accessed (IDLETIME 0, FREQ 0).
//
// A command touches the keys it names after its handler ran (Ctx.run), as
// Redis's lookupKey does for every key a command looks up, except the
// commands that look keys up with LOOKUP_NOTOUCH or not at all (their
// table entries say noTouch: EXISTS, TYPE, the TTL family, OBJECT, WATCH,
// MEMORY USAGE; RESTORE, which sets the word itself); a script's keys are
// touched by the commands it calls. A key the command created gets a new
// object's word (the LRU clock, or the LFU counter's initial 5); a key it
// deleted gets 0, so that a key created again later starts anew.

const (
	accessSet  = 1 << 24 // the word has been set
	lruMax     = 1<<24 - 1
	lfuInitVal = 5 // Redis's LFU_INIT_VAL: a new key's counter
)

// accessPolicy is what the maxmemory-policy and lfu-* settings say about
// access words (applyAccessParams).
type accessPolicy struct {
	lfu       bool
	logFactor float64
	decayTime int64 // minutes per decrement; 0: no decay
}

// applyAccessParams reads the settings into Actor.accessCfg.
func (a *Actor) applyAccessParams() {
	p := &a.accessCfg
	p.lfu = strings.HasSuffix(a.storedParamValue("maxmemory-policy"), "-lfu")
	f, _ := strconv.ParseInt(a.storedParamValue("lfu-log-factor"), 10, 64)
	p.logFactor = float64(f)
	p.decayTime, _ = strconv.ParseInt(a.storedParamValue("lfu-decay-time"), 10, 64)
}

// lruClock is Redis's LRU_CLOCK at nowMs.
func lruClock(nowMs int64) uint32 { return uint32(nowMs/1000) & lruMax }

// lfuMinutes is Redis's LFUGetTimeInMinutes.
func lfuMinutes(nowMs int64) uint32 { return uint32(nowMs/1000/60) & 65535 }

// newAccess is a new object's word (Redis's createObject).
func (a *Actor) newAccess() uint32 {
	if a.accessCfg.lfu {
		return accessSet | lfuMinutes(a.nowMs)<<8 | lfuInitVal
	}
	return accessSet | lruClock(a.nowMs)
}

// touchAccess is the word of a key accessed now (lookupKey's update).
func (a *Actor) touchAccess(w uint32) uint32 {
	if !a.accessCfg.lfu {
		return accessSet | lruClock(a.nowMs)
	}
	counter := a.lfuCounter(w)
	if counter < 255 { // LFULogIncr
		base := float64(counter) - lfuInitVal
		if base < 0 {
			base = 0
		}
		if rand.Float64() < 1/(base*a.accessCfg.logFactor+1) {
			counter++
		}
	}
	return accessSet | lfuMinutes(a.nowMs)<<8 | counter
}

// lfuCounter is Redis's LFUDecrAndReturn: the counter less one for every
// lfu-decay-time minutes since its last decrement.
func (a *Actor) lfuCounter(w uint32) uint32 {
	if w == 0 {
		return 0
	}
	ldt, counter := (w&lruMax)>>8, w&255
	now := lfuMinutes(a.nowMs)
	elapsed := now - ldt
	if now < ldt {
		elapsed = 65535 - ldt + now
	}
	if d := a.accessCfg.decayTime; d > 0 {
		periods := uint32(int64(elapsed) / d)
		if periods > counter {
			return 0
		}
		counter -= periods
	}
	return counter
}

// idleSeconds is Redis's estimateObjectIdleTime, in seconds.
func (a *Actor) idleSeconds(w uint32) int64 {
	if w == 0 {
		return 0
	}
	lru, now := int64(w&lruMax), int64(lruClock(a.nowMs))
	if now >= lru {
		return now - lru
	}
	return now + (lruMax - lru)
}

// setIdleOrFreq is Redis's objectSetLRUOrLFU for RESTORE's IDLETIME and
// FREQ (-1: not given): it reports whether it set the word.
func (a *Actor) setIdleOrFreq(w *uint32, freq, idle int64) bool {
	if a.accessCfg.lfu {
		if freq < 0 {
			return false
		}
		*w = accessSet | lfuMinutes(a.nowMs)<<8 | uint32(freq)
		return true
	}
	if idle < 0 {
		return false
	}
	abs := int64(lruClock(a.nowMs)) - idle
	if abs < 0 {
		abs += lruMax
	}
	*w = accessSet | uint32(abs)&lruMax
	return true
}

// touchKeys updates the access words of the keys the running command
// names, after its handler ran (see the top of this file).
func (c *Ctx) touchKeys() {
	cmd := c.cmd
	if cmd.noTouch || cmd.script || (c.s != nil && c.s.noTouch && !cmd.touchAlways) || cmd.meta == nil || len(cmd.meta.KeySpecs) == 0 {
		return
	}
	if !cmd.Is(FlagMovableKeys) && cmd.FirstKey > 0 {
		last := cmd.LastKey
		if last < 0 {
			last += len(c.args)
		}
		step := max(cmd.KeyStep, 1)
		for i := cmd.FirstKey; i <= last && i < len(c.args); i += step {
			c.touchKey(c.args[i])
		}
		return
	}
	keys, _ := findKeys(cmd, c.args)
	for _, k := range keys {
		if k.pos < len(c.args) {
			c.touchKey(c.args[k.pos])
		}
	}
}

// touchKey updates one key's access word.
func (c *Ctx) touchKey(key []byte) {
	w, exists := c.st.AccessWord(c.db, key)
	switch {
	case w == nil:
	case !exists:
		*w = 0
	case *w == 0:
		*w = c.a.newAccess()
	default:
		*w = c.a.touchAccess(*w)
	}
}
