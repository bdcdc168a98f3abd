package actor

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"

	"github.com/cellar-db/cellar/rdb"
)

// DEBUG DIGEST and DEBUG DIGEST-VALUE: Redis 7.0's dataset digest
// (debug.c), so that the same data gives the same 40 hex digits on Cellar
// and on Redis. Unordered collections (the keys, a set's members, a hash's
// fields, a sorted set's members) are the XOR of their elements' digests;
// ordered ones (a list, a stream) feed the digest back (mixDigest).

// xorDigest XORs SHA1(p) into d.
func xorDigest(d *[20]byte, p []byte) {
	h := sha1.Sum(p)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mixDigest is d = SHA1(d XOR SHA1(p)).
func mixDigest(d *[20]byte, p []byte) {
	xorDigest(d, p)
	*d = sha1.Sum(d[:])
}

// digestScore is a score as Redis's "%.17g" prints it.
func digestScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// xorObjectDigest mixes o (with an expiry or not) into d, as Redis's
// xorObjectDigest.
func xorObjectDigest(d *[20]byte, o *rdb.Object, expires bool) {
	var typ uint32
	switch o.Kind {
	case rdb.KindString:
		typ = 0
	case rdb.KindList:
		typ = 1
	case rdb.KindSet:
		typ = 2
	case rdb.KindZSet:
		typ = 3
	case rdb.KindHash:
		typ = 4
	case rdb.KindStream:
		typ = 6
	}
	var aux [4]byte
	binary.BigEndian.PutUint32(aux[:], typ)
	mixDigest(d, aux[:])
	switch o.Kind {
	case rdb.KindString:
		mixDigest(d, o.Str)
	case rdb.KindList:
		for _, it := range o.Items {
			mixDigest(d, it)
		}
	case rdb.KindSet:
		for _, it := range o.Items {
			xorDigest(d, it)
		}
	case rdb.KindZSet:
		for i, it := range o.Items {
			var e [20]byte
			mixDigest(&e, it)
			mixDigest(&e, digestScore(o.Scores[i]))
			xorDigest(d, e[:])
		}
	case rdb.KindHash:
		for i := 0; i+1 < len(o.Items); i += 2 {
			var e [20]byte
			mixDigest(&e, o.Items[i])
			mixDigest(&e, o.Items[i+1])
			xorDigest(d, e[:])
		}
	case rdb.KindStream:
		for _, e := range o.Stream.Entries {
			id := strconv.FormatUint(e.ID.Ms, 10) + "." + strconv.FormatUint(e.ID.Seq, 10)
			mixDigest(d, []byte(id))
			for _, f := range e.Fields {
				mixDigest(d, f)
			}
		}
	}
	if expires {
		xorDigest(d, []byte("!!expire!!"))
	}
}

// mixValue mixes the value of key in db, if it exists, into d (Redis's
// xorObjectDigest for a key found).
func (c *Ctx) mixValue(d *[20]byte, db int, key []byte) error {
	m, ok, err := c.st.Lookup(db, key)
	if err != nil || !ok {
		return err
	}
	o, err := readObject(c.st, db, key, m.Type)
	if err != nil {
		return err
	}
	xorObjectDigest(d, o, m.ExpireAt != 0)
	return nil
}

// DEBUG DIGEST: the digest of every database, as Redis's
// computeDatasetDigest (zeros when empty).
func debugDigest(c *Ctx) error {
	var final [20]byte
	for db := range numDBs {
		if c.st.DBSize(db) == 0 {
			continue
		}
		var keys [][]byte
		if err := c.st.Keys(db, nil, func(k []byte) bool {
			keys = append(keys, bytes.Clone(k))
			return true
		}); err != nil {
			return err
		}
		var aux [4]byte
		binary.BigEndian.PutUint32(aux[:], uint32(db))
		mixDigest(&final, aux[:])
		for _, k := range keys {
			var d [20]byte
			mixDigest(&d, k)
			if err := c.mixValue(&d, db, k); err != nil {
				return err
			}
			xorDigest(&final, d[:])
		}
	}
	c.w.Simple(hex.EncodeToString(final[:]))
	return nil
}

// DEBUG DIGEST-VALUE key [key ...]: each key's value digest.
func debugDigestValue(c *Ctx) error {
	c.w.Array(len(c.args) - 2)
	for _, k := range c.args[2:] {
		var d [20]byte
		if err := c.mixValue(&d, c.db, k); err != nil {
			return err
		}
		c.w.Simple(hex.EncodeToString(d[:]))
	}
	return nil
}
