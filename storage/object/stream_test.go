package object

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// streamModel is what a stream must hold, kept the plain way.
type streamModel struct {
	entries []StreamEntry // in ID order
	meta    StreamMeta
	groups  map[string]*groupModel
}

type groupModel struct {
	info      StreamGroup
	consumers map[string]int64 // name: seen
	pel       map[StreamID]StreamPending
}

func newStreamModel() *streamModel { return &streamModel{groups: map[string]*groupModel{}} }

func (m *streamModel) clone() *streamModel {
	c := &streamModel{entries: slices.Clone(m.entries), meta: m.meta, groups: map[string]*groupModel{}}
	for n, g := range m.groups {
		c.groups[n] = &groupModel{info: g.info, consumers: maps.Clone(g.consumers), pel: maps.Clone(g.pel)}
	}
	return c
}

func (m *streamModel) find(id StreamID) (int, bool) {
	return slices.BinarySearchFunc(m.entries, id, func(e StreamEntry, id StreamID) int { return e.ID.Cmp(id) })
}

// sortedNames are a model map's keys in order.
func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func sortedIDs(m map[StreamID]StreamPending) []StreamID {
	ids := slices.Collect(maps.Keys(m))
	slices.SortFunc(ids, StreamID.Cmp)
	return ids
}

// checkStream compares every read of s with m.
func checkStream(t *testing.T, s *Stream, m *streamModel, rng *rand.Rand) {
	t.Helper()
	if s.Len() != int64(len(m.entries)) || s.Meta() != m.meta {
		t.Fatalf("Len %d Meta %+v, want %d %+v", s.Len(), s.Meta(), len(m.entries), m.meta)
	}
	var all []StreamEntry
	s.Range(StreamID{}, MaxStreamID, false, 0, func(e *StreamEntry) bool {
		all = append(all, *e)
		return true
	})
	if !entriesEqual(all, m.entries) {
		t.Fatalf("entries %v, want %v", all, m.entries)
	}
	if len(m.entries) > 0 {
		first, ok1 := s.End(false)
		last, ok2 := s.End(true)
		if !ok1 || !ok2 || first != m.entries[0].ID || last != m.entries[len(m.entries)-1].ID {
			t.Fatalf("End: %v %v", first, last)
		}
		// A random range both ways, with a limit.
		a, b := m.entries[rng.IntN(len(m.entries))].ID, m.entries[rng.IntN(len(m.entries))].ID
		lo, hi := a, b
		if lo.Cmp(hi) > 0 {
			lo, hi = hi, lo
		}
		limit := int64(rng.IntN(4))
		for _, rev := range []bool{false, true} {
			var got []StreamEntry
			s.Range(lo, hi, rev, limit, func(e *StreamEntry) bool {
				got = append(got, *e)
				return true
			})
			var want []StreamEntry
			for _, e := range m.entries {
				if e.ID.Cmp(lo) >= 0 && e.ID.Cmp(hi) <= 0 {
					want = append(want, e)
				}
			}
			if rev {
				slices.Reverse(want)
			}
			if limit > 0 && int64(len(want)) > limit {
				want = want[:limit]
			}
			if !entriesEqual(got, want) {
				t.Fatalf("Range(%v, %v, %v, %d) = %v, want %v", lo, hi, rev, limit, got, want)
			}
		}
		e := m.entries[rng.IntN(len(m.entries))]
		if got, ok := s.EntryAt(e.ID); !ok || !entriesEqual([]StreamEntry{got}, []StreamEntry{e}) || !s.Has(e.ID) {
			t.Fatalf("EntryAt(%v) = %v %v", e.ID, got, ok)
		}
	} else if _, ok := s.End(false); ok {
		t.Fatal("End of an empty stream")
	}
	gs := s.Groups()
	names := sortedNames(m.groups)
	if len(gs) != len(names) || s.GroupCount() != int64(len(names)) {
		t.Fatalf("groups %v, want %v", gs, names)
	}
	for i, name := range names {
		mg := m.groups[name]
		if !groupEqual(gs[i], mg.info) {
			t.Fatalf("group %d: %+v, want %+v", i, gs[i], mg.info)
		}
		g := s.Group([]byte(name))
		if g == nil || !groupEqual(*g, mg.info) {
			t.Fatalf("Group(%q) = %+v", name, g)
		}
		checkGroup(t, s, g, mg, rng)
	}
	if s.Group([]byte("nosuchgroup")) != nil {
		t.Fatal("a group that does not exist")
	}
	if size := loadModel(m).Stream().Size(); s.Size() != size {
		t.Fatalf("Size %d, the same stream loaded %d", s.Size(), size)
	}
}

func checkGroup(t *testing.T, s *Stream, g *StreamGroup, mg *groupModel, rng *rand.Rand) {
	t.Helper()
	cs := s.Consumers(g)
	cnames := sortedNames(mg.consumers)
	if len(cs) != len(cnames) || s.ConsumerCount(g) != int64(len(cnames)) {
		t.Fatalf("%s: consumers %v, want %v", g.Name, cs, cnames)
	}
	owned := map[string]int64{}
	for _, p := range mg.pel {
		owned[string(p.Consumer)]++
	}
	for i, name := range cnames {
		if string(cs[i].Name) != name || cs[i].Seen != mg.consumers[name] || cs[i].Pending != owned[name] {
			t.Fatalf("%s: consumer %+v, want %s seen %d pending %d", g.Name, cs[i], name, mg.consumers[name], owned[name])
		}
		if seen, ok := s.Consumer(g, []byte(name)); !ok || seen != mg.consumers[name] {
			t.Fatalf("Consumer(%s) = %d %v", name, seen, ok)
		}
	}
	ids := sortedIDs(mg.pel)
	if s.PendingCount(g) != int64(len(ids)) {
		t.Fatalf("PendingCount %d, want %d", s.PendingCount(g), len(ids))
	}
	lo, hi, ok := s.PendingEnds(g)
	if ok != (len(ids) > 0) || ok && (lo != ids[0] || hi != ids[len(ids)-1]) {
		t.Fatalf("PendingEnds %v %v %v, want %v", lo, hi, ok, ids)
	}
	var per []string
	s.PendingPerConsumer(g, func(name []byte, n int64) { per = append(per, fmt.Sprintf("%s:%d", name, n)) })
	var wantPer []string
	for _, name := range sortedNames(owned) {
		wantPer = append(wantPer, fmt.Sprintf("%s:%d", name, owned[name]))
	}
	if !slices.Equal(per, wantPer) {
		t.Fatalf("PendingPerConsumer %v, want %v", per, wantPer)
	}
	all := s.PendingRange(g, nil, StreamID{}, MaxStreamID, 1<<62, 0)
	if len(all) != len(ids) {
		t.Fatalf("PEL %v, want %v", all, ids)
	}
	for i, id := range ids {
		if !pendingEqual(all[i], mg.pel[id]) {
			t.Fatalf("PEL entry %+v, want %+v", all[i], mg.pel[id])
		}
		if p, ok := s.Pending(g, id); !ok || !pendingEqual(p, mg.pel[id]) {
			t.Fatalf("Pending(%v) = %+v %v", id, p, ok)
		}
	}
	// A random range, delivered by a random time, of one consumer or all.
	var who []byte
	if rng.IntN(2) == 0 {
		who = []byte(fmt.Sprintf("c%d", rng.IntN(4)))
	}
	from, to := StreamID{uint64(rng.IntN(40)), 0}, StreamID{uint64(rng.IntN(60)), uint64(rng.IntN(3))}
	by, limit := int64(rng.IntN(100)), int64(rng.IntN(4))
	got := s.PendingRange(g, who, from, to, by, limit)
	var want []StreamPending
	for _, id := range ids {
		p := mg.pel[id]
		if id.Cmp(from) >= 0 && id.Cmp(to) <= 0 && p.Delivered <= by && (who == nil || bytes.Equal(who, p.Consumer)) {
			want = append(want, p)
		}
	}
	if limit > 0 && int64(len(want)) > limit {
		want = want[:limit]
	}
	if len(got) != len(want) {
		t.Fatalf("PendingRange(%s, %v, %v, %d, %d) = %v, want %v", who, from, to, by, limit, got, want)
	}
	for i := range got {
		if !pendingEqual(got[i], want[i]) {
			t.Fatalf("PendingRange: %+v, want %+v", got[i], want[i])
		}
	}
}

func entriesEqual(a, b []StreamEntry) bool {
	return slices.EqualFunc(a, b, func(x, y StreamEntry) bool {
		return x.ID == y.ID && slices.EqualFunc(x.Fields, y.Fields, bytes.Equal)
	})
}

func groupEqual(a, b StreamGroup) bool {
	return bytes.Equal(a.Name, b.Name) && a.Last == b.Last && a.EntriesRead == b.EntriesRead
}

func pendingEqual(a, b StreamPending) bool {
	return a.ID == b.ID && bytes.Equal(a.Consumer, b.Consumer) && a.Delivered == b.Delivered && a.Count == b.Count
}

// loadModel builds m's stream through a StreamLoader, from rows in their
// tables' order.
func loadModel(m *streamModel) *StreamLoader {
	l := LoadStream(m.meta)
	for _, e := range m.entries {
		l.Entry(e)
	}
	for _, name := range sortedNames(m.groups) {
		l.Group(m.groups[name].info)
	}
	for _, name := range sortedNames(m.groups) {
		mg := m.groups[name]
		for _, c := range sortedNames(mg.consumers) {
			l.Consumer([]byte(name), StreamConsumer{Name: []byte(c), Seen: mg.consumers[c]})
		}
		for _, id := range sortedIDs(mg.pel) {
			l.Pending([]byte(name), mg.pel[id])
		}
	}
	return l
}

// streamRows are a stream's rows as a flush leaves them, for applying
// Deltas to.
type streamRows struct {
	meta      StreamMeta
	entries   map[StreamID][][]byte
	groups    map[string]StreamGroup
	consumers map[[2]string]int64
	pel       map[string]map[StreamID]StreamPending
}

func newStreamRows() *streamRows {
	return &streamRows{entries: map[StreamID][][]byte{}, groups: map[string]StreamGroup{}, consumers: map[[2]string]int64{}, pel: map[string]map[StreamID]StreamPending{}}
}

func (r *streamRows) dropGroup(name string) {
	delete(r.groups, name)
	delete(r.pel, name)
	for k := range r.consumers {
		if k[0] == name {
			delete(r.consumers, k)
		}
	}
}

// apply writes d as StreamDelta's doc says a flush does.
func (r *streamRows) apply(d *StreamDelta) {
	if d.All {
		*r = *newStreamRows()
	}
	if d.MetaChanged {
		r.meta = d.Meta
	}
	if d.Trimmed {
		for id := range r.entries {
			if id.Cmp(d.TrimTo) <= 0 {
				delete(r.entries, id)
			}
		}
	}
	for _, id := range d.Gone {
		delete(r.entries, id)
	}
	d.EachEntry(func(e *StreamEntry) error {
		r.entries[e.ID] = e.Fields
		return nil
	})
	for _, name := range d.DroppedGroups {
		r.dropGroup(string(name))
	}
	for i := range d.Groups {
		g := &d.Groups[i]
		name := string(g.Group.Name)
		if g.All {
			r.dropGroup(name)
		}
		if g.All || g.RowChanged {
			r.groups[name] = g.Group
		}
		for _, c := range g.GoneConsumers {
			delete(r.consumers, [2]string{name, string(c)})
		}
		if r.pel[name] == nil {
			r.pel[name] = map[StreamID]StreamPending{}
		}
		for _, id := range g.GonePending {
			delete(r.pel[name], id)
		}
		g.EachConsumer(func(c *StreamConsumer) error {
			r.consumers[[2]string{name, string(c.Name)}] = c.Seen
			return nil
		})
		g.EachPending(func(p *StreamPending) error {
			r.pel[name][p.ID] = *p
			return nil
		})
	}
}

// check compares the rows with m.
func (r *streamRows) check(t *testing.T, m *streamModel) {
	t.Helper()
	if r.meta != m.meta || len(r.entries) != len(m.entries) {
		t.Fatalf("rows: meta %+v and %d entries, want %+v and %d", r.meta, len(r.entries), m.meta, len(m.entries))
	}
	for _, e := range m.entries {
		if f, ok := r.entries[e.ID]; !ok || !slices.EqualFunc(f, e.Fields, bytes.Equal) {
			t.Fatalf("rows: entry %v is %v (%v)", e.ID, f, ok)
		}
	}
	if len(r.groups) != len(m.groups) {
		t.Fatalf("rows: %d groups, want %d", len(r.groups), len(m.groups))
	}
	ncons, npel := 0, 0
	for name, mg := range m.groups {
		if g, ok := r.groups[name]; !ok || !groupEqual(g, mg.info) {
			t.Fatalf("rows: group %q is %+v", name, g)
		}
		for c, seen := range mg.consumers {
			if got, ok := r.consumers[[2]string{name, c}]; !ok || got != seen {
				t.Fatalf("rows: consumer %s/%s seen %d (%v), want %d", name, c, got, ok, seen)
			}
		}
		ncons += len(mg.consumers)
		for id, p := range mg.pel {
			if got, ok := r.pel[name][id]; !ok || !pendingEqual(got, p) {
				t.Fatalf("rows: pending %s/%v is %+v", name, id, got)
			}
		}
		npel += len(mg.pel)
	}
	n := 0
	for _, p := range r.pel {
		n += len(p)
	}
	if len(r.consumers) != ncons || n != npel {
		t.Fatalf("rows: %d consumers and %d pending, want %d and %d", len(r.consumers), n, ncons, npel)
	}
}

// streamOp changes s and m alike at random: appends, deletions, trims,
// XSETID, groups created, saved and destroyed, consumers seen and deleted,
// deliveries, claims and acks.
func streamOp(t *testing.T, s *Stream, m *streamModel, rng *rand.Rand, step int) {
	t.Helper()
	gname := fmt.Sprintf("g%d", rng.IntN(3))
	cname := []byte(fmt.Sprintf("c%d", rng.IntN(4)))
	mg := m.groups[gname]
	g := &StreamGroup{Name: []byte(gname)}
	randID := func() StreamID {
		if len(m.entries) > 0 && rng.IntN(4) > 0 {
			return m.entries[rng.IntN(len(m.entries))].ID
		}
		return StreamID{uint64(rng.IntN(50)), uint64(rng.IntN(3))}
	}
	switch n := rng.IntN(100); {
	case n < 35:
		id := m.meta.Last
		if rng.IntN(3) == 0 {
			id.Seq++
		} else {
			id = StreamID{id.Ms + uint64(rng.IntN(2)+1), 0}
		}
		if rng.IntN(20) == 0 {
			// Not above the last ID.
			if err := s.Add(m.meta.Last, [][]byte{[]byte("f"), []byte("v")}); err != ErrStreamIDTooSmall {
				t.Fatalf("Add of the last ID: %v", err)
			}
			return
		}
		fields := [][]byte{[]byte("f"), []byte(fmt.Sprint(step))}
		if rng.IntN(2) == 0 {
			fields = append(fields, []byte("g"), bytes.Repeat([]byte("x"), rng.IntN(10)))
		}
		if err := s.Add(id, fields); err != nil {
			t.Fatal(err)
		}
		m.entries = append(m.entries, StreamEntry{ID: id, Fields: fields})
		m.meta.Last = id
		m.meta.EntriesAdded++
	case n < 45:
		ids := []StreamID{randID(), randID()}
		var want int64
		for _, id := range slices.Compact(slices.SortedFunc(slices.Values(ids), StreamID.Cmp)) {
			if i, ok := m.find(id); ok {
				m.entries = slices.Delete(m.entries, i, i+1)
				want++
				if id.Cmp(m.meta.MaxDeleted) > 0 {
					m.meta.MaxDeleted = id
				}
			}
		}
		if got := s.Delete(ids); got != want {
			t.Fatalf("Delete(%v) = %d, want %d", ids, got, want)
		}
	case n < 52:
		tr := StreamTrim{Strategy: TrimMaxLen, MaxLen: int64(rng.IntN(12)), Approx: rng.IntN(3) == 0, NodeSize: int64(rng.IntN(4))}
		var c int64
		if rng.IntN(2) == 0 {
			tr.Strategy, tr.MinID = TrimMinID, randID()
			for _, e := range m.entries {
				if e.ID.Cmp(tr.MinID) < 0 {
					c++
				}
			}
		} else {
			c = max(int64(len(m.entries))-tr.MaxLen, 0)
		}
		if rng.IntN(3) == 0 {
			tr.Limit = int64(rng.IntN(5) + 1)
		}
		want := modelTrimCount(tr, c, int64(len(m.entries)))
		if got := s.Trim(tr); got != want {
			t.Fatalf("Trim(%+v) = %d, want %d", tr, got, want)
		}
		m.entries = slices.Delete(m.entries, 0, int(want))
	case n < 54:
		if len(m.entries) == 0 {
			// XSETID on an empty stream may move the last ID back, so
			// that IDs trimmed before are added again.
			m.meta.Last = m.meta.MaxDeleted
			m.meta.EntriesAdded += int64(rng.IntN(3))
			s.SetMeta(m.meta)
		}
	case n < 58:
		info := StreamGroup{Name: []byte(gname), Last: randID(), EntriesRead: int64(rng.IntN(5) - 1)}
		if s.CreateGroup(info) != (mg == nil) {
			t.Fatalf("CreateGroup(%s) with the group %v", gname, mg != nil)
		}
		if mg == nil {
			m.groups[gname] = &groupModel{info: info, consumers: map[string]int64{}, pel: map[StreamID]StreamPending{}}
		}
	case n < 60:
		if s.DestroyGroup([]byte(gname)) != (mg != nil) {
			t.Fatalf("DestroyGroup(%s) with the group %v", gname, mg != nil)
		}
		delete(m.groups, gname)
	case mg == nil:
		// What follows needs the group; on one that is gone it finds and
		// does nothing.
		if s.SeeConsumer(g, cname, 1) || s.PendingCount(g) != 0 || s.Ack(g, randID()) {
			t.Fatal("an operation on a missing group did something")
		}
		s.SetPending(g, StreamPending{ID: randID(), Consumer: cname})
		s.SaveGroup(g)
	case n < 65:
		mg.info.Last, mg.info.EntriesRead = randID(), int64(step)
		g.Last, g.EntriesRead = mg.info.Last, mg.info.EntriesRead
		s.SaveGroup(g)
	case n < 70:
		_, had := mg.consumers[string(cname)]
		now := int64(step)
		var created bool
		if rng.IntN(2) == 0 {
			created = s.CreateConsumer(g, cname, now)
			if !had {
				mg.consumers[string(cname)] = now
			}
		} else {
			created = s.SeeConsumer(g, cname, now)
			mg.consumers[string(cname)] = now
		}
		if created == had {
			t.Fatalf("consumer %s created %v, existed %v", cname, created, had)
		}
	case n < 73:
		var want int64
		if _, had := mg.consumers[string(cname)]; had {
			for id, p := range mg.pel {
				if bytes.Equal(p.Consumer, cname) {
					delete(mg.pel, id)
					want++
				}
			}
		}
		delete(mg.consumers, string(cname))
		if got := s.DeleteConsumer(g, cname); got != want {
			t.Fatalf("DeleteConsumer(%s) = %d, want %d", cname, got, want)
		}
	case n < 90:
		// A delivery or a claim: the consumer is seen first.
		// (Rarely not: a PEL entry may name a consumer the group lacks.)
		if rng.IntN(10) > 0 {
			_, had := mg.consumers[string(cname)]
			if s.SeeConsumer(g, cname, int64(step)) == had {
				t.Fatalf("SeeConsumer(%s) created it, existed %v", cname, had)
			}
			mg.consumers[string(cname)] = int64(step)
		}
		p := StreamPending{ID: randID(), Consumer: cname, Delivered: int64(rng.IntN(100)), Count: int64(rng.IntN(5) + 1)}
		s.SetPending(g, p)
		p.Consumer = append([]byte{}, cname...)
		mg.pel[p.ID] = p
	default:
		id := randID()
		_, had := mg.pel[id]
		if s.Ack(g, id) != had {
			t.Fatalf("Ack(%v) with it pending %v", id, had)
		}
		delete(mg.pel, id)
	}
}

// modelTrimCount is how many entries a trim removes when c entries are
// below its threshold in a stream of length entries.
func modelTrimCount(tr StreamTrim, c, length int64) int64 {
	size := tr.NodeSize
	if size <= 0 {
		size = NodeEntries
	}
	switch {
	case tr.Approx:
		if c < length {
			c = c / size * size
		}
		if tr.Limit > 0 && c > tr.Limit {
			c = tr.Limit / size * size
		}
	case tr.Limit > 0 && c > tr.Limit:
		c = tr.Limit
	}
	return c
}

// A stream changed at random answers every read as the model does; its
// Deltas, applied to rows as a flush would (each after the stream has
// changed again), leave the rows the model had at the Freeze.
func TestStreamModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s, m := NewStream(), newStreamModel()
			rows := newStreamRows()
			var pending *StreamDelta
			var frozen *streamModel
			for step := 0; step < 5000; step++ {
				streamOp(t, s, m, rng, step)
				if rng.IntN(10) == 0 {
					checkStream(t, s, m, rng)
				}
				if rng.IntN(40) == 0 {
					if pending != nil {
						rows.apply(pending)
						rows.check(t, frozen)
					}
					pending, frozen = s.Freeze(), m.clone()
					if s.Changed() {
						t.Fatal("Changed right after Freeze")
					}
				}
				if rng.IntN(500) == 0 {
					// A copy is a new key: its first Delta writes it whole.
					s = s.Clone()
					if pending != nil {
						rows.apply(pending)
						rows.check(t, frozen)
					}
					pending, frozen = nil, nil
					rows = newStreamRows()
				}
				if rng.IntN(700) == 0 {
					// Loaded from its rows: nothing is dirty.
					s = loadModel(m).Stream()
					if s.Changed() {
						t.Fatal("a loaded stream has changes")
					}
					if pending != nil {
						rows.apply(pending)
					}
					pending, frozen = nil, nil
					rows = newStreamRows()
					rows.apply(loadModel(m).Stream().Clone().Freeze())
				}
			}
			checkStream(t, s, m, rng)
			if pending != nil {
				rows.apply(pending)
			}
			rows.apply(s.Freeze())
			rows.check(t, m)
		})
	}
}

// XADD with trimming at a high rate gives Deltas as large as what was
// added and trimmed since the last one, not the stream's length; a new
// stream's first Delta is a snapshot, not a copy of the entries.
func TestStreamDeltaProportional(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 5000; i++ {
		s.Add(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")})
	}
	d := s.Freeze()
	if !d.All || d.put != nil || d.tree.Len() != 5000 {
		t.Fatalf("a new stream's Delta: All %v, %d put, %d in its tree", d.All, len(d.put), d.tree.Len())
	}
	for i := 5001; i <= 50000; i++ {
		s.Add(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")})
		s.Trim(StreamTrim{Strategy: TrimMaxLen, MaxLen: 1000, Approx: true})
		if i%10 != 0 {
			continue
		}
		d := s.Freeze()
		n := 0
		d.EachEntry(func(e *StreamEntry) error {
			if e.ID.Ms <= uint64(i-10) {
				t.Fatalf("entry %v written again", e.ID)
			}
			n++
			return nil
		})
		if d.All || n > 10 || len(d.Gone) != 0 || d.tree != nil {
			t.Fatalf("step %d: All %v, %d entries written, %d gone", i, d.All, n, len(d.Gone))
		}
		if s.Len() < 1000 || s.Len() >= 1100 {
			t.Fatalf("step %d: %d entries", i, s.Len())
		}
		if d.Trimmed && (d.TrimTo.Ms >= uint64(i-999) || d.TrimTo.Ms%100 != 0) {
			t.Fatalf("step %d: trimmed to %v", i, d.TrimTo)
		}
	}
}

// Approximate and limited trims remove what Redis removes: whole nodes
// from the first entry, never more than LIMIT.
func TestStreamTrim(t *testing.T) {
	for _, tc := range []struct {
		tr   StreamTrim
		want int64
	}{
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 10}, 240},
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true}, 200},
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 0, Approx: true}, 250},
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true, NodeSize: 7}, 238},
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Approx: true, Limit: 150}, 100},
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 10, Limit: 150}, 150},
		{StreamTrim{Strategy: TrimMaxLen, MaxLen: 300}, 0},
		{StreamTrim{Strategy: TrimMinID, MinID: StreamID{121, 0}}, 120},
		{StreamTrim{Strategy: TrimMinID, MinID: StreamID{121, 0}, Approx: true}, 100},
		{StreamTrim{Strategy: TrimMinID, MinID: StreamID{121, 0}, Limit: 7}, 7},
		{StreamTrim{Strategy: TrimMinID, MinID: StreamID{1000, 0}, Approx: true}, 250},
		{StreamTrim{Strategy: TrimNone}, 0},
	} {
		s := NewStream()
		for i := 1; i <= 250; i++ {
			s.Add(StreamID{uint64(i), 0}, [][]byte{[]byte("f"), []byte("v")})
		}
		if got := s.Trim(tc.tr); got != tc.want || s.Len() != 250-tc.want {
			t.Errorf("Trim(%+v) = %d leaving %d, want %d", tc.tr, got, s.Len(), tc.want)
		}
		if first, ok := s.End(false); tc.want < 250 && (!ok || first.Ms != uint64(tc.want+1)) {
			t.Errorf("Trim(%+v): first %v", tc.tr, first)
		}
	}
}

// A Delta is read on another goroutine while the stream goes on changing:
// it shares nothing the actor writes (run with -race), and holds the
// stream as it was at the Freeze, whole or in part.
func TestStreamDeltaConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	s, m := NewStream(), newStreamModel()
	rows := newStreamRows()
	for round := 0; round < 20; round++ {
		for step := 0; step < 400; step++ {
			streamOp(t, s, m, rng, round*1000+step)
		}
		if round == 10 {
			s = s.Clone()
			rows = newStreamRows()
		}
		d, frozen := s.Freeze(), m.clone()
		done := make(chan struct{})
		go func() {
			rows.apply(d)
			close(done)
		}()
		for step := 0; step < 400; step++ {
			streamOp(t, s, m, rng, round*1000+500+step)
		}
		<-done
		rows.check(t, frozen)
	}
}
