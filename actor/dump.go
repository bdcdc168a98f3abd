package actor

import (
	"errors"
	"strings"

	"github.com/cellar-db/cellar/rdb"
)

// DUMP and RESTORE. The conversion between Cellar's keys and the rdb
// package's values, which they share with the core (the replica's load,
// the master's full sync), is in rdbobject.go.

var dumpCommands = registerCommands([]*Command{
	{Name: "dump", Summary: "Serializes a key's value in Redis's DUMP format (RDB version 10).", Handler: cmdDump},
	{Name: "restore", Summary: "Creates a key from a DUMP payload.", Handler: cmdRestore, noTouch: true, absoluteForm: restoreAbsolute},
})

// The keyspace notification events of what these commands write
// (notify.go, eventSpec).
var _ = addEvents(map[string]*eventSpec{
	"restore": {class: notifyGeneric, event: "restore"},
})

// DUMP key
func cmdDump(c *Ctx) error {
	m, ok, err := c.readKey(c.args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Null()
		return nil
	}
	o, err := readObject(c.st, c.db, c.args[1], m.Type)
	if err != nil {
		return err
	}
	c.f.dump = rdb.AppendDump(c.f.dump[:0], o)
	c.w.Bulk(c.f.dump)
	return nil
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
// [FREQ frequency]: the checks in the order of Redis 7.0's restoreCommand.
// IDLETIME and FREQ set the key's access clock (access.go), the one the
// restoreAbsolute is RESTORE's form for replicas when it sets a TTL:
// with ABSTTL and the deadline (Redis's restoreCommand).
func restoreAbsolute(e effect) [][]byte {
	n, ok := e.intArg(2)
	if !ok || n == 0 {
		return nil
	}
	for _, a := range e.args[4:] {
		if strings.EqualFold(string(a), "absttl") {
			return nil
		}
	}
	out := append([][]byte{e.args[0], e.args[1], e.unixMs(n, false)}, e.args[3:]...)
	return append(out, []byte("ABSTTL"))
}

// policy in force reads; without them it is a new key's.
func cmdRestore(c *Ctx) error {
	replace, absTTL, idle, freq := false, false, false, false
	idleSecs, freqVal := int64(-1), int64(-1)
	for j := 4; j < len(c.args); j++ {
		more := len(c.args) - j - 1
		switch {
		case c.argEq(j, "replace"):
			replace = true
		case c.argEq(j, "absttl"):
			absTTL = true
		case c.argEq(j, "idletime") && more >= 1 && !freq:
			v, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			if v < 0 {
				return ErrRestoreIdle
			}
			idle, idleSecs = true, v
			j++
		case c.argEq(j, "freq") && more >= 1 && !idle:
			v, err := c.intArg(j + 1)
			if err != nil {
				return err
			}
			if v < 0 || v > 255 {
				return ErrRestoreFreq
			}
			freq, freqVal = true, v
			j++
		default:
			return ErrSyntax
		}
	}
	key := c.args[1]
	if !replace {
		if _, ok, err := c.st.Lookup(c.db, key); err != nil {
			return err
		} else if ok {
			return ErrBusyKey
		}
	}
	ttl, err := c.intArg(2)
	if err != nil {
		return err
	}
	if ttl < 0 {
		return ErrRestoreTTL
	}
	o, err := rdb.DecodeDump(c.args[3])
	if errors.Is(err, rdb.ErrDumpVersion) {
		return ErrDumpPayload
	}
	if err != nil {
		return ErrBadDataFormat
	}
	if replace {
		if _, err := c.st.Delete(c.db, key); err != nil {
			return err
		}
	}
	if ttl != 0 && !absTTL {
		ttl += c.now
	}
	if ttl != 0 && ttl <= c.now {
		// Already expired: only the deletion REPLACE made, as in Redis.
		c.w.OK()
		return nil
	}
	if err := writeObject(c.st, c.db, key, o, ttl); err != nil {
		return err
	}
	if w, ok := c.st.AccessWord(c.db, key); ok && !c.a.setIdleOrFreq(w, freqVal, idleSecs) {
		*w = c.a.newAccess()
	}
	c.w.OK()
	return nil
}
