package object

import (
	"bytes"
	"slices"

	"github.com/tidwall/btree"
)

// A stream's consumer groups: each has its last delivered ID and read
// counter, its consumers by name, and its PEL twice over: by ID (the
// rows), and by consumer then ID (XPENDING ... consumer, XREADGROUP's
// history, DELCONSUMER, per-consumer counts); SQLite's stream_pel holds
// the rows by ID only.
//
// The operations take the group as the caller read it (Group); on a group
// the stream no longer has they do nothing and find nothing.

// StreamGroup is a consumer group's state.
type StreamGroup struct {
	Name []byte
	Last StreamID
	// EntriesRead is the group's logical read counter; -1 when unknown.
	EntriesRead int64
}

// StreamConsumer is one consumer of a group. Pending is filled in by
// Consumers only.
type StreamConsumer struct {
	Name    []byte
	Seen    int64 // unix ms
	Pending int64
}

// StreamPending is one entry of a group's PEL.
type StreamPending struct {
	ID        StreamID
	Consumer  []byte
	Delivered int64 // unix ms of the last delivery
	Count     int64
}

// Footprints beyond the names' bytes: a group with its three trees
// (measured: 472 bytes with a 5-byte name), a consumer in its tree (measured: 82 bytes with an 11-byte name), a PEL
// entry in both of its trees (measured: 184 bytes), whose consumer name is
// the consumer's.
const (
	groupOverhead    = 464
	consumerOverhead = 72
	pendingOverhead  = 184
)

// consumer is a consumer as its group's tree holds it.
type consumer struct {
	name []byte
	seen int64
}

// owned is a PEL entry in the by-consumer tree.
type owned struct {
	consumer []byte
	id       StreamID
}

// consumerOrder, pendingOrder and ownedOrder are the rows' orders: by
// name, by ID, by consumer then ID.
func consumerOrder(a, b consumer) bool { return bytes.Compare(a.name, b.name) < 0 }

func pendingOrder(a, b StreamPending) bool { return a.ID.Cmp(b.ID) < 0 }

func ownedOrder(a, b owned) bool {
	if c := bytes.Compare(a.consumer, b.consumer); c != 0 {
		return c < 0
	}
	return a.id.Cmp(b.id) < 0
}

// treeOptions are a stream's trees': one goroutine uses them (the actor,
// or the flush a snapshot), no locks.
var treeOptions = btree.Options{NoLocks: true, Degree: 32}

// group is one consumer group. Every PEL entry is in both pel and byOwner;
// a PEL entry's Consumer is the consumer's stored name when it has one.
type group struct {
	name        []byte
	last        StreamID
	entriesRead int64
	consumers   *btree.BTreeG[consumer]
	pel         *btree.BTreeG[StreamPending]
	byOwner     *btree.BTreeG[owned]
	size        int64

	// Changes since the last Freeze, when neither the stream nor the group
	// is all: the group's row, the consumers (by name) and the PEL entries
	// (by ID) set or removed. all: the group is new, every row is written.
	// queued: it is in the stream's changed list; gone: it was destroyed.
	all, row, queued, gone bool
	cons                   map[string]struct{}
	pend                   map[StreamID]struct{}
}

// newGroup returns an empty group with g's name (copied) and state.
func newGroup(g StreamGroup) *group {
	return &group{
		name:        append([]byte{}, g.Name...),
		last:        g.Last,
		entriesRead: g.EntriesRead,
		consumers:   btree.NewBTreeGOptions(consumerOrder, treeOptions),
		pel:         btree.NewBTreeGOptions(pendingOrder, treeOptions),
		byOwner:     btree.NewBTreeGOptions(ownedOrder, treeOptions),
		size:        int64(groupOverhead + len(g.Name)),
	}
}

// info is g's state as StreamGroup gives it; Name is g's.
func (g *group) info() StreamGroup {
	return StreamGroup{Name: g.name, Last: g.last, EntriesRead: g.entriesRead}
}

// clone copies g, its trees copy on write, with every row new.
func (g *group) clone() *group {
	return &group{
		name: g.name, last: g.last, entriesRead: g.entriesRead,
		consumers: g.consumers.Copy(), pel: g.pel.Copy(), byOwner: g.byOwner.Copy(),
		size: g.size, all: true,
	}
}

// findGroup is the position of the group named name in s.groups, or where
// it would go.
func (s *Stream) findGroup(name []byte) (int, bool) {
	return slices.BinarySearchFunc(s.groups, name, func(g *group, n []byte) int { return bytes.Compare(g.name, n) })
}

// group returns the group named name; nil when s has none.
func (s *Stream) group(name []byte) *group {
	if i, ok := s.findGroup(name); ok {
		return s.groups[i]
	}
	return nil
}

// tracked returns g when its changes are to be recorded one by one (the
// stream and the group are not written whole), queued for Freeze.
func (s *Stream) tracked(g *group) *group {
	if s.all || g.all {
		return nil
	}
	if !g.queued {
		g.queued = true
		s.changed = append(s.changed, g)
	}
	return g
}

// markConsumer records that g's consumer named name was set or removed.
func (s *Stream) markConsumer(g *group, name []byte) {
	if t := s.tracked(g); t != nil {
		if t.cons == nil {
			t.cons = make(map[string]struct{})
		}
		if _, ok := t.cons[string(name)]; !ok {
			t.cons[string(name)] = struct{}{}
		}
	}
}

// markPending records that id in g's PEL was set or removed.
func (s *Stream) markPending(g *group, id StreamID) {
	if t := s.tracked(g); t != nil {
		if t.pend == nil {
			t.pend = make(map[StreamID]struct{})
		}
		t.pend[id] = struct{}{}
	}
}

// Group returns a copy of the group named name; nil when s has none.
func (s *Stream) Group(name []byte) *StreamGroup {
	g := s.group(name)
	if g == nil {
		return nil
	}
	info := g.info()
	return &info
}

// Groups lists the groups in name order.
func (s *Stream) Groups() []StreamGroup {
	out := make([]StreamGroup, len(s.groups))
	for i, g := range s.groups {
		out[i] = g.info()
	}
	return out
}

// GroupCount is the number of groups.
func (s *Stream) GroupCount() int64 { return int64(len(s.groups)) }

// CreateGroup adds a group with no consumers and nothing pending; created
// is false when one of that name exists.
func (s *Stream) CreateGroup(g StreamGroup) (created bool) {
	i, ok := s.findGroup(g.Name)
	if ok {
		return false
	}
	ng := newGroup(g)
	ng.all = true
	if !s.all {
		ng.queued = true
		s.changed = append(s.changed, ng)
	}
	s.groups = slices.Insert(s.groups, i, ng)
	s.size += ng.size
	return true
}

// SaveGroup stores g's last ID and read counter.
func (s *Stream) SaveGroup(g *StreamGroup) {
	gr := s.group(g.Name)
	if gr == nil {
		return
	}
	gr.last, gr.entriesRead = g.Last, g.EntriesRead
	if t := s.tracked(gr); t != nil {
		t.row = true
	}
}

// DestroyGroup removes a group with its consumers and PEL; destroyed is
// false when there was none.
func (s *Stream) DestroyGroup(name []byte) (destroyed bool) {
	i, ok := s.findGroup(name)
	if !ok {
		return false
	}
	g := s.groups[i]
	s.groups = slices.Delete(s.groups, i, i+1)
	s.size -= g.size
	g.gone = true
	if !s.all {
		s.dropped = append(s.dropped, g.name)
	}
	return true
}

// Consumer reads a consumer's seen time; found is false when the group has
// no consumer of that name.
func (s *Stream) Consumer(g *StreamGroup, name []byte) (seen int64, found bool) {
	gr := s.group(g.Name)
	if gr == nil {
		return 0, false
	}
	c, ok := gr.consumers.Get(consumer{name: name})
	return c.seen, ok
}

// CreateConsumer adds a consumer seen at now; created is false when it
// exists (its seen time is left alone) or the group does not.
func (s *Stream) CreateConsumer(g *StreamGroup, name []byte, now int64) (created bool) {
	gr := s.group(g.Name)
	if gr == nil {
		return false
	}
	if _, ok := gr.consumers.Get(consumer{name: name}); ok {
		return false
	}
	gr.addConsumer(s, consumer{name: append([]byte{}, name...), seen: now})
	s.markConsumer(gr, name)
	return true
}

// addConsumer adds c, new to g, and counts its size in g and s.
func (g *group) addConsumer(s *Stream, c consumer) {
	g.consumers.Set(c)
	n := int64(consumerOverhead + len(c.name))
	g.size += n
	s.size += n
}

// SeeConsumer creates the consumer if needed and sets its seen time to now
// (what Redis does whenever a consumer acts); created reports a new one.
func (s *Stream) SeeConsumer(g *StreamGroup, name []byte, now int64) (created bool) {
	gr := s.group(g.Name)
	if gr == nil {
		return false
	}
	c, ok := gr.consumers.Get(consumer{name: name})
	if !ok {
		return s.CreateConsumer(g, name, now)
	}
	if c.seen != now {
		c.seen = now
		gr.consumers.Set(c)
		s.markConsumer(gr, name)
	}
	return false
}

// DeleteConsumer removes a consumer and its pending entries and reports
// how many were pending (0 when there was no such consumer).
func (s *Stream) DeleteConsumer(g *StreamGroup, name []byte) int64 {
	gr := s.group(g.Name)
	if gr == nil {
		return 0
	}
	c, ok := gr.consumers.Delete(consumer{name: name})
	if !ok {
		return 0
	}
	n := int64(consumerOverhead + len(c.name))
	gr.size -= n
	s.size -= n
	s.markConsumer(gr, name)
	var ids []StreamID
	gr.byOwner.Ascend(owned{consumer: name}, func(o owned) bool {
		if !bytes.Equal(o.consumer, name) {
			return false
		}
		ids = append(ids, o.id)
		return true
	})
	for _, id := range ids {
		s.removePending(gr, id)
	}
	return int64(len(ids))
}

// Consumers lists a group's consumers in name order, with their pending
// counts.
func (s *Stream) Consumers(g *StreamGroup) []StreamConsumer {
	gr := s.group(g.Name)
	if gr == nil {
		return nil
	}
	out := make([]StreamConsumer, 0, gr.consumers.Len())
	gr.consumers.Scan(func(c consumer) bool {
		out = append(out, StreamConsumer{Name: c.name, Seen: c.seen, Pending: gr.ownedCount(c.name)})
		return true
	})
	return out
}

// ownedCount is the number of entries pending for the consumer named name.
func (g *group) ownedCount(name []byte) int64 {
	from := partition(g.byOwner, func(o owned) bool { return bytes.Compare(o.consumer, name) < 0 })
	to := partition(g.byOwner, func(o owned) bool { return bytes.Compare(o.consumer, name) <= 0 })
	return int64(to - from)
}

// ConsumerCount is the number of a group's consumers.
func (s *Stream) ConsumerCount(g *StreamGroup) int64 {
	if gr := s.group(g.Name); gr != nil {
		return int64(gr.consumers.Len())
	}
	return 0
}

// Pending reads one PEL entry; found is false when id is not pending.
func (s *Stream) Pending(g *StreamGroup, id StreamID) (p StreamPending, found bool) {
	if gr := s.group(g.Name); gr != nil {
		return gr.pel.Get(StreamPending{ID: id})
	}
	return p, false
}

// SetPending stores a PEL entry, replacing the one with the same ID. Its
// consumer is normally one the group has (the caller sees it first).
func (s *Stream) SetPending(g *StreamGroup, p StreamPending) {
	gr := s.group(g.Name)
	if gr == nil {
		return
	}
	if c, ok := gr.consumers.Get(consumer{name: p.Consumer}); ok {
		p.Consumer = c.name
	} else {
		p.Consumer = append([]byte{}, p.Consumer...)
	}
	old, replaced := gr.pel.Set(p)
	switch {
	case !replaced:
		gr.size += pendingOverhead
		s.size += pendingOverhead
		gr.byOwner.Set(owned{consumer: p.Consumer, id: p.ID})
	case !bytes.Equal(old.Consumer, p.Consumer):
		gr.byOwner.Delete(owned{consumer: old.Consumer, id: p.ID})
		gr.byOwner.Set(owned{consumer: p.Consumer, id: p.ID})
	}
	s.markPending(gr, p.ID)
}

// removePending takes id out of gr's PEL; it reports whether it was there.
func (s *Stream) removePending(gr *group, id StreamID) bool {
	p, ok := gr.pel.Delete(StreamPending{ID: id})
	if !ok {
		return false
	}
	gr.byOwner.Delete(owned{consumer: p.Consumer, id: id})
	gr.size -= pendingOverhead
	s.size -= pendingOverhead
	s.markPending(gr, id)
	return true
}

// Ack removes id from the group's PEL; acked is false when it was not
// pending.
func (s *Stream) Ack(g *StreamGroup, id StreamID) (acked bool) {
	if gr := s.group(g.Name); gr != nil {
		return s.removePending(gr, id)
	}
	return false
}

// PendingCount is the size of a group's PEL.
func (s *Stream) PendingCount(g *StreamGroup) int64 {
	if gr := s.group(g.Name); gr != nil {
		return int64(gr.pel.Len())
	}
	return 0
}

// PendingEnds is the smallest and largest pending ID; ok is false when
// nothing is pending.
func (s *Stream) PendingEnds(g *StreamGroup) (lo, hi StreamID, ok bool) {
	gr := s.group(g.Name)
	if gr == nil {
		return lo, hi, false
	}
	first, ok := gr.pel.Min()
	last, _ := gr.pel.Max()
	return first.ID, last.ID, ok
}

// PendingPerConsumer calls fn with each consumer that has pending entries,
// in name order, and their number: O(log² n) per consumer.
func (s *Stream) PendingPerConsumer(g *StreamGroup, fn func(name []byte, n int64)) {
	gr := s.group(g.Name)
	if gr == nil {
		return
	}
	for at := 0; at < gr.byOwner.Len(); {
		o, _ := gr.byOwner.GetAt(at)
		end := partition(gr.byOwner, func(x owned) bool { return bytes.Compare(x.consumer, o.consumer) <= 0 })
		fn(o.consumer, int64(end-at))
		at = end
	}
}

// PendingRange lists PEL entries from lo to hi (inclusive) in ID order,
// delivered at or before deliveredBy, of consumer only when it is not nil;
// at most limit (<= 0: all). The entries' Consumer slices are the
// stream's.
func (s *Stream) PendingRange(g *StreamGroup, consumer []byte, lo, hi StreamID, deliveredBy, limit int64) []StreamPending {
	gr := s.group(g.Name)
	if gr == nil || lo.Cmp(hi) > 0 {
		return nil
	}
	var out []StreamPending
	take := func(p StreamPending) bool {
		if p.Delivered <= deliveredBy {
			out = append(out, p)
		}
		return limit <= 0 || int64(len(out)) < limit
	}
	if consumer == nil {
		gr.pel.Ascend(StreamPending{ID: lo}, func(p StreamPending) bool {
			return p.ID.Cmp(hi) <= 0 && take(p)
		})
		return out
	}
	gr.byOwner.Ascend(owned{consumer: consumer, id: lo}, func(o owned) bool {
		if !bytes.Equal(o.consumer, consumer) || o.id.Cmp(hi) > 0 {
			return false
		}
		p, _ := gr.pel.Get(StreamPending{ID: o.id})
		return take(p)
	})
	return out
}
