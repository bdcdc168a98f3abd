package actor

import (
	"errors"

	"github.com/cellar-db/cellar/storage"
)

// Keyspace hits and misses (INFO's keyspace_hits and keyspace_misses) are
// counted in one place, countLookup, by Redis 7.0's rule (its lookupKey):
// every key a command looks up in order to read it counts once, a hit when
// the key exists whatever its type (a WRONGTYPE reply is a hit), a miss
// when it does not (an expired key is a miss). A lookup in order to write
// (Redis's lookupKeyWrite: SET, INCR, APPEND, the pushes and pops, blocking
// or not, DEL, EXPIRE, PERSIST, RENAME, MOVE, HSET, ZADD, ...) counts
// nothing, and neither do walks of the key space (KEYS, SCAN, RANDOMKEY).
// Some writes read first and count that read: GETSET, GETDEL, GETEX, SET
// with GET, COPY's source, and the sources of the STORE commands
// (SINTERSTORE, ZUNIONSTORE, ZRANGESTORE, ...). Checked against
// redis-server 7.0, command by command.
//
// The read helpers below are how read commands look keys up; the list
// reads, whose storage calls do the lookup themselves, report what they
// found to countLookup directly.

// countLookup counts one read lookup that found the key or not, or failed
// with err. A key of another type was found; any other failure counts
// nothing.
// A miss is also Redis's "keymiss" keyspace notification (class m).
//
// It is also where a tracking client's reads are noted (tracking.go): the
// keys a read-only command looks up are the ones its client may cache.
func (c *Ctx) countLookup(key []byte, found bool, err error) {
	if c.s.track != nil && c.cmd.Is(FlagReadonly) {
		c.trackRead(key)
	}
	switch {
	case errors.Is(err, storage.ErrWrongType) || (err == nil && found):
		c.a.stats.keyspaceHits++
	case err == nil:
		c.a.stats.keyspaceMisses++
		if c.a.notify&notifyKeyMiss != 0 {
			c.a.notifyEvent(notifyKeyMiss, "keymiss", c.db, key)
		}
	}
}

// readKey looks key up to read it (EXISTS, TYPE, TTL, OBJECT, COPY's
// source).
func (c *Ctx) readKey(key []byte) (storage.Meta, bool, error) {
	m, ok, err := c.st.Lookup(c.db, key)
	c.countLookup(key, ok, err)
	return m, ok, err
}

// readColl opens key, a collection of one of types, to read it; nil when
// the key is missing.
func (c *Ctx) readColl(key []byte, types ...storage.Type) (*storage.Coll, error) {
	coll, err := c.st.OpenAnyColl(c.db, key, types...)
	c.countLookup(key, coll != nil, err)
	return coll, err
}

// getString reads a string key.
func (c *Ctx) getString(key []byte) ([]byte, bool, error) { return c.getStringInto(key, nil) }

// getStringInto is getString appending the value to dst.
func (c *Ctx) getStringInto(key, dst []byte) ([]byte, bool, error) {
	v, ok, err := c.st.GetString(c.db, key, dst)
	c.countLookup(key, ok, err)
	return v, ok, err
}
