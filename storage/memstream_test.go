package storage

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellar-db/cellar/storage/object"
)

// streamModel is what a stream must hold, kept the plain way.
type streamModel struct {
	entries map[object.StreamID][][]byte
	meta    object.StreamMeta
	groups  map[string]*streamGroupModel
}

type streamGroupModel struct {
	info      object.StreamGroup
	consumers map[string]int64 // name: seen
	pel       map[object.StreamID]object.StreamPending
}

func (m *streamModel) clone() *streamModel {
	c := &streamModel{entries: maps.Clone(m.entries), meta: m.meta, groups: map[string]*streamGroupModel{}}
	for n, g := range m.groups {
		c.groups[n] = &streamGroupModel{info: g.info, consumers: maps.Clone(g.consumers), pel: maps.Clone(g.pel)}
	}
	return c
}

func (m *streamModel) ids() []object.StreamID {
	ids := slices.Collect(maps.Keys(m.entries))
	slices.SortFunc(ids, object.StreamID.Cmp)
	return ids
}

// checkLoaded compares s, a stream loaded, with m.
func checkLoaded(t *testing.T, s *object.Stream, m *streamModel) {
	t.Helper()
	if s.Meta() != m.meta || s.Len() != int64(len(m.entries)) {
		t.Fatalf("loaded meta %+v and %d entries, want %+v and %d", s.Meta(), s.Len(), m.meta, len(m.entries))
	}
	ids := m.ids()
	i := 0
	s.Range(object.StreamID{}, object.MaxStreamID, false, 0, func(e *object.StreamEntry) bool {
		if i >= len(ids) || e.ID != ids[i] || !slices.EqualFunc(e.Fields, m.entries[e.ID], bytes.Equal) {
			t.Fatalf("loaded entry %d: %v %q", i, e.ID, e.Fields)
		}
		i++
		return true
	})
	gs := s.Groups()
	names := slices.Sorted(maps.Keys(m.groups))
	if len(gs) != len(names) {
		t.Fatalf("loaded %d groups, want %v", len(gs), names)
	}
	for i, name := range names {
		mg := m.groups[name]
		g := &gs[i]
		if string(g.Name) != name || g.Last != mg.info.Last || g.EntriesRead != mg.info.EntriesRead {
			t.Fatalf("loaded group %+v, want %+v", *g, mg.info)
		}
		cs := s.Consumers(g)
		cnames := slices.Sorted(maps.Keys(mg.consumers))
		owned := map[string]int64{}
		for _, p := range mg.pel {
			owned[string(p.Consumer)]++
		}
		if len(cs) != len(cnames) {
			t.Fatalf("%s: loaded consumers %v, want %v", name, cs, cnames)
		}
		for j, c := range cs {
			if string(c.Name) != cnames[j] || c.Seen != mg.consumers[cnames[j]] || c.Pending != owned[cnames[j]] {
				t.Fatalf("%s: loaded consumer %s seen %d pending %d, want %s %d %d", name, c.Name, c.Seen, c.Pending, cnames[j], mg.consumers[cnames[j]], owned[cnames[j]])
			}
		}
		pel := s.PendingRange(g, nil, object.StreamID{}, object.MaxStreamID, 1<<62, 0)
		if len(pel) != len(mg.pel) {
			t.Fatalf("%s: loaded %d pending, want %d", name, len(pel), len(mg.pel))
		}
		for _, p := range pel {
			want := mg.pel[p.ID]
			if p.ID != want.ID || !bytes.Equal(p.Consumer, want.Consumer) || p.Delivered != want.Delivered || p.Count != want.Count {
				t.Fatalf("%s: loaded pending %+v, want %+v", name, p, want)
			}
		}
		for who, n := range owned {
			if got := len(s.PendingRange(g, []byte(who), object.StreamID{}, object.MaxStreamID, 1<<62, 0)); int64(got) != n {
				t.Fatalf("%s: loaded %d pending for %s, want %d", name, got, who, n)
			}
		}
	}
}

// streamRowCount is the number of rows stream id has in every stream
// table.
func streamRowCount(t *testing.T, r *sqlc, id int64) int64 {
	t.Helper()
	st := r.q(`SELECT (SELECT count(*) FROM streams WHERE id = ?1) + (SELECT count(*) FROM stream_entries WHERE id = ?1) +
		(SELECT count(*) FROM stream_groups WHERE id = ?1) + (SELECT count(*) FROM stream_consumers WHERE id = ?1) +
		(SELECT count(*) FROM stream_pel WHERE id = ?1)`)
	defer st.reset()
	st.int(1, id)
	if _, err := st.step(); err != nil {
		t.Fatal(err)
	}
	return st.colInt(0)
}

// A stream changed at random — appends with trimming, deletions, XSETID,
// groups created and destroyed, deliveries, claims, acks and consumers
// deleted — frozen and flushed at random points (changed again between
// the two), loads back as the model was at the Freeze; dropStream leaves
// no row of it and none of another stream's goes.
func TestStreamFlushAndLoad(t *testing.T) {
	w, r := memConns(t)
	const id, other = 7, 8
	o := object.NewStream()
	o.Add(object.StreamID{Ms: 1}, [][]byte{[]byte("f"), []byte("v")})
	o.CreateGroup(object.StreamGroup{Name: []byte("g0")})
	flushTx(t, w, func() error { return flushStream(w, other, o.Freeze()) })
	otherRows := streamRowCount(t, r, other)

	rng := rand.New(rand.NewPCG(3, 9))
	s := object.NewStream()
	m := &streamModel{entries: map[object.StreamID][][]byte{}, groups: map[string]*streamGroupModel{}}
	flushed := 0
	check := func(want *streamModel) {
		t.Helper()
		got, err := loadStream(r, id)
		if err != nil {
			t.Fatal(err)
		}
		checkLoaded(t, got, want)
		flushed++
	}
	for step := 1; step <= 6000; step++ {
		streamStep(t, s, m, rng, step)
		switch n := rng.IntN(100); {
		case n < 3:
			d, frozen := s.Freeze(), m.clone()
			for k := rng.IntN(4); k > 0; k-- {
				streamStep(t, s, m, rng, step)
			}
			flushTx(t, w, func() error { return flushStream(w, id, d) })
			check(frozen)
		case n == 3 && step%7 == 0:
			// Loaded back, it goes on from its rows.
			d := s.Freeze()
			flushTx(t, w, func() error { return flushStream(w, id, d) })
			var err error
			if s, err = loadStream(r, id); err != nil {
				t.Fatal(err)
			}
			if s.Changed() {
				t.Fatal("a loaded stream has changes")
			}
		case n == 4 && step%11 == 0:
			// A copy is written whole over the old rows.
			s = s.Clone()
		}
	}
	flushTx(t, w, func() error { return flushStream(w, id, s.Freeze()) })
	check(m)
	if flushed < 100 || len(m.entries) == 0 || len(m.groups) == 0 {
		t.Fatalf("%d flushes ended with %d entries and %d groups: the test tests little", flushed, len(m.entries), len(m.groups))
	}
	flushTx(t, w, func() error { return dropStream(w, id) })
	if n := streamRowCount(t, r, id); n != 0 {
		t.Fatalf("%d rows outlive dropStream", n)
	}
	if n := streamRowCount(t, r, other); n != otherRows {
		t.Fatalf("the other stream has %d rows, had %d", n, otherRows)
	}
	if _, err := loadStream(r, id); err == nil {
		t.Fatal("a stream without its metadata row loads")
	}
}

// streamStep changes s and m alike at random.
func streamStep(t *testing.T, s *object.Stream, m *streamModel, rng *rand.Rand, step int) {
	t.Helper()
	gname := fmt.Sprintf("g%d", rng.IntN(3))
	if rng.IntN(10) == 0 {
		gname = ""
	}
	cname := []byte(fmt.Sprintf("c%d", rng.IntN(4)))
	mg := m.groups[gname]
	g := &object.StreamGroup{Name: []byte(gname)}
	ids := m.ids()
	randID := func() object.StreamID {
		if len(ids) > 0 && rng.IntN(4) > 0 {
			return ids[rng.IntN(len(ids))]
		}
		return object.StreamID{Ms: uint64(rng.IntN(step + 1)), Seq: uint64(rng.IntN(3))}
	}
	switch n := rng.IntN(100); {
	case n < 40:
		id := object.StreamID{Ms: m.meta.Last.Ms + uint64(rng.IntN(2)), Seq: 1}
		if id.Ms == m.meta.Last.Ms {
			id.Seq = m.meta.Last.Seq + 1
		}
		fields := [][]byte{[]byte("f"), bytes.Repeat([]byte{byte('a' + step%26)}, []int{0, 7, 3000}[rng.IntN(3)])}
		if err := s.Add(id, fields); err != nil {
			t.Fatal(err)
		}
		m.entries[id] = fields
		m.meta.Last = id
		m.meta.EntriesAdded++
		if rng.IntN(2) == 0 {
			tr := object.StreamTrim{Strategy: object.TrimMaxLen, MaxLen: int64(rng.IntN(200)), Approx: rng.IntN(2) == 0, NodeSize: 10}
			n := s.Trim(tr)
			for _, id := range m.ids()[:n] {
				delete(m.entries, id)
			}
		}
	case n < 45:
		id := randID()
		want := int64(0)
		if _, ok := m.entries[id]; ok {
			want = 1
			delete(m.entries, id)
			if id.Cmp(m.meta.MaxDeleted) > 0 {
				m.meta.MaxDeleted = id
			}
		}
		if got := s.Delete([]object.StreamID{id}); got != want {
			t.Fatalf("Delete(%v) = %d, want %d", id, got, want)
		}
	case n < 47:
		tr := object.StreamTrim{Strategy: object.TrimMinID, MinID: randID()}
		n := s.Trim(tr)
		for _, id := range m.ids()[:n] {
			if id.Cmp(tr.MinID) >= 0 {
				t.Fatalf("Trim(%+v) removed %v", tr, id)
			}
			delete(m.entries, id)
		}
	case n < 48:
		if len(m.entries) == 0 {
			// XSETID back to the largest ID deleted: trimmed IDs come
			// again.
			m.meta.Last = m.meta.MaxDeleted
			m.meta.EntriesAdded += 5
			s.SetMeta(m.meta)
		}
	case n < 52:
		info := object.StreamGroup{Name: []byte(gname), Last: randID(), EntriesRead: int64(rng.IntN(9) - 1)}
		if s.CreateGroup(info) != (mg == nil) {
			t.Fatalf("CreateGroup(%q) with the group %v", gname, mg != nil)
		}
		if mg == nil {
			m.groups[gname] = &streamGroupModel{info: info, consumers: map[string]int64{}, pel: map[object.StreamID]object.StreamPending{}}
		}
	case n < 54:
		if s.DestroyGroup([]byte(gname)) != (mg != nil) {
			t.Fatalf("DestroyGroup(%q) with the group %v", gname, mg != nil)
		}
		delete(m.groups, gname)
	case mg == nil:
	case n < 60:
		mg.info.Last, mg.info.EntriesRead = randID(), int64(step)
		g.Last, g.EntriesRead = mg.info.Last, mg.info.EntriesRead
		s.SaveGroup(g)
	case n < 80:
		// A delivery or a claim, its consumer seen first.
		s.SeeConsumer(g, cname, int64(step))
		mg.consumers[string(cname)] = int64(step)
		p := object.StreamPending{ID: randID(), Consumer: cname, Delivered: int64(step - rng.IntN(10)), Count: int64(rng.IntN(5) + 1)}
		s.SetPending(g, p)
		mg.pel[p.ID] = p
	case n < 85:
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
	default:
		id := randID()
		if len(mg.pel) > 0 && rng.IntN(2) == 0 {
			for id = range mg.pel {
				break
			}
		}
		_, had := mg.pel[id]
		if s.Ack(g, id) != had {
			t.Fatalf("Ack(%v) with it pending %v", id, had)
		}
		delete(mg.pel, id)
	}
}
