package storage

import "encoding/binary"

// Hash field expiration (Redis 7.4's HEXPIRE family). A field's expiry is
// the expire_at column of its row (unix ms, NULL when it has none;
// migration 11), indexed for the sweep. A field past its expiry is removed
// before any command sees its hash: on open (lazily) and by the sweep
// (actively), both through expireFields, which records one FieldsExpired
// change naming the fields, so that the redo log has them as an HDEL and
// keyspace notifications as "hexpired".
//
// Whether a hash may hold a field due for expiry is known without a query:
// hfe maps the id of every hash with fields that have expiries to a time
// at or before the earliest of them (a lower bound: a later expiry set, an
// expiry removed or a field deleted leaves it early, and the next look at
// the hash moves it on). With no field expiries anywhere, opening a hash
// costs one length test.

var (
	qHLoadExpiry = newQuery("SELECT id, min(expire_at) FROM hashes WHERE expire_at IS NOT NULL GROUP BY id")
)

// loadFieldExpiries fills hfe from the database (on open).
func (s *Store) loadFieldExpiries() error {
	s.hfe = map[int64]int64{}
	st := s.q(qHLoadExpiry)
	defer st.reset()
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		s.hfe[st.colInt(0)] = st.colInt(1)
	}
}

// HashFieldExpiry is field's expiry (unix ms; 0 for none); found is false
// when the hash has no such field.
func (s *Store) HashFieldExpiry(c *Coll, field []byte) (at int64, found bool, err error) {
	at, found = s.mem.hashFieldExpiry(c, field)
	return at, found, nil
}

// HashSetFieldExpiry sets field's expiry to at (unix ms), or removes it
// (at 0). The field must exist.
func (s *Store) HashSetFieldExpiry(c *Coll, field []byte, at int64) error {
	s.mem.hashSetFieldExpiry(c, field, at)
	return nil
}

// recordFields records a FieldsExpired change: fields in its Effect
// (uvarint-prefixed names), Other 1 when the hash went with them.
func (s *Store) recordFields(db int, key, fields []byte, gone bool) {
	other := 0
	if gone {
		other = 1
	}
	s.record(db, key, FieldsExpired, other)
	start := len(s.touchKeys)
	s.touchKeys = append(s.touchKeys, fields...)
	s.touches[len(s.touches)-1].Effect = s.touchKeys[start:len(s.touchKeys):len(s.touchKeys)]
}

// ExpiredFields splits a FieldsExpired change's Effect into field names
// (appended to dst).
func ExpiredFields(effect []byte, dst [][]byte) [][]byte {
	for len(effect) > 0 {
		n, k := binary.Uvarint(effect)
		if k <= 0 || uint64(len(effect)-k) < n {
			return dst
		}
		dst = append(dst, effect[k:k+int(n)])
		effect = effect[k+int(n):]
	}
	return dst
}

// SweepExpiredFields removes the expired fields of up to limit hashes whose
// fields expire first (deleting a hash left empty) and reports how many
// hashes it expired fields of (rows of no key, which no write leaves, are
// not counted, so that they cannot keep the sweep going).
func (s *Store) SweepExpiredFields(limit int) (int, error) {
	return s.mem.sweepFields(limit)
}
