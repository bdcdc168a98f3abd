package storage

// This file holds what hashes, sets and sorted sets share: the open-key
// handle (Coll) and the element hash that orders rows for SCAN cursors
// and random sampling.
//
// Layout (migration 3): one table per type, keyed by (id, h, element) with
// h = elemHash(element). The count of elements is the keys row's value
// column (an INTEGER for these types), so HLEN/SCARD/ZCARD and "is it empty
// now" never count rows.

// Coll is a hash, set or sorted set key opened by one command. The command
// changes elements through the Store's element methods, which keep Len up
// to date and note the Coll as changed; when the command ends, EndCommand
// bumps the key's version, records the change, and deletes the key if it
// became empty. A Coll is valid only within the
// command that opened it.
type Coll struct {
	DB       int
	Key      []byte
	Type     Type
	ID       int64
	ExpireAt int64
	Len      int64  // element count, kept up to date by the element methods
	saved    int64  // Len as stored
	created  bool   // the key row was inserted by this command
	replaced bool   // created over a live key (ReplaceColl)
	modified bool   // an element changed in place (a value, a score)
	open     bool   // changed, waiting for EndCommand
	e        *entry // the in-memory engine's entry of the key
}

// OpenColl finds the live key and checks that it is of type t. A key of
// another type is ErrWrongType; a missing key is (nil, nil).
func (s *Store) OpenColl(db int, key []byte, t Type) (*Coll, error) {
	return s.openColl(db, key, []Type{t})
}

func (s *Store) openColl(db int, key []byte, types []Type) (*Coll, error) {
	return s.mem.openColl(db, key, types)
}

// OpenOrCreateColl is OpenColl that creates an empty key of type t when
// there is none. The command adds elements to it; if it adds none, the key
// goes again when the command ends (an empty collection never outlives its
// command).
func (s *Store) OpenOrCreateColl(db int, key []byte, t Type) (*Coll, error) {
	c, err := s.OpenColl(db, key, t)
	if err != nil || c != nil {
		return c, err
	}
	return s.createColl(db, key, t)
}

// createColl inserts the key row of a new, empty collection. The caller
// knows that no live key of that name exists.
func (s *Store) createColl(db int, key []byte, t Type) (*Coll, error) {
	return s.mem.createColl(db, key, t)
}

// ReplaceColl makes key a fresh, empty collection of type t, deleting
// whatever it held (the STORE commands). The command adds the elements; a
// result with no elements leaves no key.
func (s *Store) ReplaceColl(db int, key []byte, t Type) (*Coll, error) {
	return s.mem.replaceColl(db, key, t)
}

// changed notes that the running command changed c (inPlace: an element
// changed without coming or going), so that EndCommand saves it.
func (s *Store) changed(c *Coll, inPlace bool) {
	s.dirty = true
	c.modified = c.modified || inPlace
	if !c.open {
		c.open = true
		s.open = append(s.open, c)
	}
}

// EndCommand ends the running command's changes to collections: for each
// one it changed, the new element count is stored, the key's version
// bumped and the change recorded, and a collection left empty is deleted
// (a hash, set or sorted set never exists empty). Counts are saved here,
// once per command, rather than at every element: a command that sets a
// thousand fields writes the key's row once. The actor calls it after
// every command and every woken waiter's retry, whether or not it
// succeeded (what a failed command changed is saved like the rest, unless
// it is undone); the handlers never do.
func (s *Store) EndCommand() error {
	s.mem.endCollections()
	s.mem.endCommand()
	return nil
}

// dropOpen forgets the changed collections without saving them (their
// changes are being undone or rolled back).
func (s *Store) dropOpen() {
	for i, c := range s.open {
		c.open = false
		s.open[i] = nil
	}
	s.open = s.open[:0]
}

// ScanLimit bounds the elements one SCAN-family call reads, whatever COUNT
// asks (a call returns at least min(COUNT, ScanLimit) elements unless the
// collection ends first).
const ScanLimit = 100000

// Elem is one element of a collection: a hash's field and value, a set's
// member, or a sorted set's member and score.
type Elem struct {
	Member []byte // hash field, set or sorted set member
	Value  []byte // hash value
	Score  float64
}

// Elements calls fn with every element of c, in no particular order. The
// Elem (and its slices) is reused: fn copies what it keeps. fn must not
// change c.
func (s *Store) Elements(c *Coll, fn func(e *Elem) bool) error {
	s.mem.elements(c, fn)
	return nil
}

// OrderedElements is Elements in the order Redis gives a collection in its
// compact encoding, where it can: a hash's fields in insertion order, for
// the callers of small hashes. The rows are read in storage order and
// sorted in memory (measured cheaper than SQLite's ORDER BY, which builds a
// sorter for every call); other types come in storage order.
func (s *Store) OrderedElements(c *Coll, fn func(e *Elem) bool) error {
	s.mem.elements(c, fn) // a small set is in insertion order already
	return nil
}

// AllElements returns copies of every element of c, a small hash's in
// insertion order (OrderedElements).
func (s *Store) AllElements(c *Coll) ([]Elem, error) {
	return s.mem.allElements(c), nil
}

// SmallHash is the size up to which Redis 7.0 keeps a hash in a listpack
// (hash-max-listpack-entries), in insertion order: AllElements keeps that
// order for hashes up to this size (HSCAN, HRANDFIELD with a count that
// takes every field).
const SmallHash = 128

// ScanElements is one call of HSCAN/SSCAN/ZSCAN: elements in h order from
// cursor on, at least count of them (never splitting a run of equal h), and
// the cursor to go on with (0 when done). An element present for a whole
// iteration is returned exactly once.
func (s *Store) ScanElements(c *Coll, cursor uint64, count int, fn func(e *Elem)) (uint64, error) {
	return s.mem.scanElements(c, cursor, count, fn), nil
}

// Sample returns n different random elements of c (all of them when
// n >= Len), as SRANDMEMBER, SPOP, HRANDFIELD and ZRANDMEMBER with a
// positive count return. A small collection is sampled uniformly (one
// element as the row at a random offset, which SQLite skips to without
// reading the rows before it); a large one as a window of consecutive rows
// from a uniformly random point of its hash order, so the cost is
// O(n + log N) whatever N.
func (s *Store) Sample(c *Coll, n int64) ([]Elem, error) {
	return s.mem.sample(c, n), nil
}

// SampleRepeats calls fn with n random elements of c, repeats allowed (the
// negative counts of the random commands); fn returning false stops it. A
// collection of up to 65 536 elements is sampled uniformly; a larger one
// by one seek per pick for small n, else by uniform picks from a window of
// up to 65 536 consecutive rows at a random point of the hash order. Memory
// and reads stay bounded whatever n; the caller bounds the reply.
func (s *Store) SampleRepeats(c *Coll, n int64, fn func(e *Elem) bool) error {
	s.mem.sampleRepeats(c, n, fn)
	return nil
}

// OpenAnyColl is OpenColl for a key that may be of any of types (the
// sorted-set operations also read sets); c.Type says which it is.
func (s *Store) OpenAnyColl(db int, key []byte, types ...Type) (*Coll, error) {
	return s.openColl(db, key, types)
}
