package object

import (
	"bytes"
	"slices"

	"github.com/tidwall/btree"
)

// A stream records its changes since the last Freeze by kind:
//   - entries: the IDs added or deleted one by one (an append, XDEL), and
//     for trimming one bound, the largest ID trimmed from the front: every
//     row up to it goes, however many, in one range delete. An XADD with
//     trimming thus records one ID and moves the bound. Every entry up to
//     the bound was gone when it was set; one added at or below it since
//     (XSETID on an empty stream may move the last ID back) is written
//     after the range delete.
//   - the metadata row: a flag.
//   - groups: the names destroyed (every row of the group goes), and per
//     group its row, its consumers by name and its PEL entries by ID set
//     or removed; a group created since is written whole.
//
// A stream written whole (new, or a copy) records nothing else: its Freeze
// snapshots the trees (copy on write), never copying them.

// StreamDelta is what changed in a stream between two Freezes, for the
// flush to write, in this order:
//   - All: every row of the stream is deleted, then Meta, EachEntry's
//     entries and Groups are written (each group All).
//   - otherwise: Meta when MetaChanged; when Trimmed the entry rows up to
//     TrimTo (inclusive) are deleted, then Gone's; EachEntry's are written
//     (inserted or replaced); every row of DroppedGroups' groups is
//     deleted; then Groups are written.
//
// A Delta is the flush's: the actor never changes what it holds.
type StreamDelta struct {
	All         bool
	Meta        StreamMeta
	MetaChanged bool
	Trimmed     bool
	TrimTo      StreamID
	Gone        []StreamID // in ID order
	put         []StreamEntry
	tree        *btree.BTreeG[StreamEntry] // All: a copy-on-write snapshot
	// DroppedGroups are the names of groups destroyed since the last
	// Freeze, in name order; a group of one of those names created again
	// is in Groups too.
	DroppedGroups [][]byte
	Groups        []GroupDelta // in name order
}

// EachEntry calls fn with every entry to write, in ID order.
func (d *StreamDelta) EachEntry(fn func(e *StreamEntry) error) error {
	if d.tree != nil {
		var err error
		d.tree.Scan(func(e StreamEntry) bool {
			err = fn(&e)
			return err == nil
		})
		return err
	}
	for i := range d.put {
		if err := fn(&d.put[i]); err != nil {
			return err
		}
	}
	return nil
}

// GroupDelta is what changed in one group: when All, every row of the
// group is deleted first and the group's row, EachConsumer's and
// EachPending's are written; otherwise the group's row when RowChanged,
// GoneConsumers' and GonePending's rows are deleted and EachConsumer's and
// EachPending's written (inserted or replaced).
type GroupDelta struct {
	Group         StreamGroup
	All           bool
	RowChanged    bool
	GoneConsumers [][]byte   // in name order
	GonePending   []StreamID // in ID order
	consumers     []consumer
	pending       []StreamPending
	// All: copy-on-write snapshots of the group's trees.
	consTree *btree.BTreeG[consumer]
	pelTree  *btree.BTreeG[StreamPending]
}

// EachConsumer calls fn with every consumer to write, in name order; its
// Pending is 0.
func (g *GroupDelta) EachConsumer(fn func(c *StreamConsumer) error) error {
	var c StreamConsumer
	if g.consTree != nil {
		var err error
		g.consTree.Scan(func(x consumer) bool {
			c = StreamConsumer{Name: x.name, Seen: x.seen}
			err = fn(&c)
			return err == nil
		})
		return err
	}
	for _, x := range g.consumers {
		c = StreamConsumer{Name: x.name, Seen: x.seen}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// EachPending calls fn with every PEL entry to write, in ID order.
func (g *GroupDelta) EachPending(fn func(p *StreamPending) error) error {
	if g.pelTree != nil {
		var err error
		g.pelTree.Scan(func(p StreamPending) bool {
			err = fn(&p)
			return err == nil
		})
		return err
	}
	for i := range g.pending {
		if err := fn(&g.pending[i]); err != nil {
			return err
		}
	}
	return nil
}

// Changed reports whether anything changed since the last Freeze.
func (s *Stream) Changed() bool {
	return s.all || s.metaDirty || len(s.touched) > 0 || s.trimmed || len(s.dropped) > 0 || len(s.changed) > 0
}

// Freeze returns what changed since the last Freeze and starts recording
// afresh. Its cost is the number of changes recorded (trees are
// snapshotted copy on write), never the stream's size.
func (s *Stream) Freeze() *StreamDelta {
	d := &StreamDelta{All: s.all, Meta: s.meta, MetaChanged: s.all || s.metaDirty}
	if s.all {
		d.tree = s.entries.Copy()
		for _, g := range s.groups {
			d.Groups = append(d.Groups, g.snapshot())
			g.reset()
		}
	} else {
		d.Trimmed, d.TrimTo = s.trimmed, s.trimTo
		s.freezeEntries(d)
		slices.SortFunc(s.dropped, bytes.Compare)
		d.DroppedGroups = slices.CompactFunc(s.dropped, bytes.Equal)
		slices.SortFunc(s.changed, func(a, b *group) int { return bytes.Compare(a.name, b.name) })
		for _, g := range s.changed {
			if g.gone {
				continue
			}
			if g.all {
				d.Groups = append(d.Groups, g.snapshot())
			} else {
				d.Groups = append(d.Groups, g.freeze())
			}
			g.reset()
		}
	}
	s.all, s.metaDirty, s.touched, s.trimmed, s.trimTo = false, false, nil, false, StreamID{}
	s.dropped, s.changed = nil, nil
	return d
}

// freezeEntries puts the entries touched one by one in d: those there now
// to write, the others to delete, but for those the trim's range deletes.
func (s *Stream) freezeEntries(d *StreamDelta) {
	slices.SortFunc(s.touched, StreamID.Cmp)
	ids := slices.Compact(s.touched)
	for _, id := range ids {
		if e, ok := s.entries.Get(StreamEntry{ID: id}); ok {
			d.put = append(d.put, e)
		} else if !s.trimmed || id.Cmp(s.trimTo) > 0 {
			d.Gone = append(d.Gone, id)
		}
	}
}

// snapshot is the whole of g, for a group written whole.
func (g *group) snapshot() GroupDelta {
	return GroupDelta{Group: g.info(), All: true, RowChanged: true, consTree: g.consumers.Copy(), pelTree: g.pel.Copy()}
}

// freeze is what changed in g, recorded one by one.
func (g *group) freeze() GroupDelta {
	gd := GroupDelta{Group: g.info(), RowChanged: g.row}
	for name := range g.cons {
		if c, ok := g.consumers.Get(consumer{name: []byte(name)}); ok {
			gd.consumers = append(gd.consumers, c)
		} else {
			gd.GoneConsumers = append(gd.GoneConsumers, []byte(name))
		}
	}
	for id := range g.pend {
		if p, ok := g.pel.Get(StreamPending{ID: id}); ok {
			gd.pending = append(gd.pending, p)
		} else {
			gd.GonePending = append(gd.GonePending, id)
		}
	}
	slices.SortFunc(gd.consumers, func(a, b consumer) int { return bytes.Compare(a.name, b.name) })
	slices.SortFunc(gd.GoneConsumers, bytes.Compare)
	slices.SortFunc(gd.pending, func(a, b StreamPending) int { return a.ID.Cmp(b.ID) })
	slices.SortFunc(gd.GonePending, StreamID.Cmp)
	return gd
}

// reset forgets g's recorded changes.
func (g *group) reset() {
	g.all, g.row, g.queued, g.cons, g.pend = false, false, false, nil, nil
}

// StreamLoader builds a stream from its rows (a key loaded from SQLite):
// nothing of it is dirty. Rows come in their tables' order: entries in ID
// order, groups in name order, each group's consumers in name order and
// its PEL in ID order, after the group. A consumer or PEL row of a group
// not loaded is ignored.
type StreamLoader struct {
	s *Stream
	g *group // the group last named
}

// LoadStream starts loading a stream whose metadata is m.
func LoadStream(m StreamMeta) *StreamLoader {
	return &StreamLoader{s: &Stream{entries: newEntryTree(), meta: m}}
}

// Entry adds e, above every entry added before. It takes e's fields.
func (l *StreamLoader) Entry(e StreamEntry) {
	l.s.entries.Load(e)
	l.s.size += e.size()
}

// Group adds a group, after those added before in name order.
func (l *StreamLoader) Group(g StreamGroup) {
	l.g = newGroup(g)
	l.s.groups = append(l.s.groups, l.g)
	l.s.size += l.g.size
}

// group returns the loaded group named name, the last one named first.
func (l *StreamLoader) group(name []byte) *group {
	if l.g == nil || !bytes.Equal(l.g.name, name) {
		l.g = l.s.group(name)
	}
	return l.g
}

// Consumer adds a consumer of the group named group. It takes c's name.
func (l *StreamLoader) Consumer(group []byte, c StreamConsumer) {
	if g := l.group(group); g != nil {
		g.addConsumer(l.s, consumer{name: c.Name, seen: c.Seen})
	}
}

// Pending adds an entry to the PEL of the group named group, in ID order,
// after the group's consumers: its Consumer becomes the consumer's stored
// name, or is taken when the group has no consumer of that name.
func (l *StreamLoader) Pending(group []byte, p StreamPending) {
	g := l.group(group)
	if g == nil {
		return
	}
	if c, ok := g.consumers.Get(consumer{name: p.Consumer}); ok {
		p.Consumer = c.name
	}
	g.pel.Load(p)
	g.byOwner.Set(owned{consumer: p.Consumer, id: p.ID})
	g.size += pendingOverhead
	l.s.size += pendingOverhead
}

// Stream is the stream loaded.
func (l *StreamLoader) Stream() *Stream { return l.s }
