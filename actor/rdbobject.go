package actor

import (
	"errors"

	"github.com/cellar-db/cellar/rdb"
	"github.com/cellar-db/cellar/storage"
)

// The conversion between Cellar's keys and the rdb package's values: the
// core's (the replica's load, replication.go; the master's full sync,
// fullsync.go) and the families' (DUMP and RESTORE, dump.go; MIGRATE;
// DEBUG DIGEST-VALUE).

// readObject reads the live key of type t into an rdb.Object.
func readObject(st *storage.Store, db int, key []byte, t storage.Type) (*rdb.Object, error) {
	o := &rdb.Object{}
	switch t {
	case storage.TypeString:
		v, _, err := st.GetString(db, key, nil)
		o.Kind, o.Str = rdb.KindString, v
		return o, err
	case storage.TypeList:
		o.Kind = rdb.KindList
		_, err := st.ListRange(db, key, 0, -1, func(int64) {}, func(v []byte) { o.Items = append(o.Items, append([]byte(nil), v...)) })
		return o, err
	case storage.TypeHash, storage.TypeSet, storage.TypeZSet:
		coll, err := st.OpenColl(db, key, t)
		if err != nil || coll == nil {
			return nil, errOr(err, "actor: key vanished while dumped")
		}
		o.Kind = map[storage.Type]rdb.Kind{storage.TypeHash: rdb.KindHash, storage.TypeSet: rdb.KindSet, storage.TypeZSet: rdb.KindZSet}[t]
		err = st.Elements(coll, func(e *storage.Elem) bool {
			o.Items = append(o.Items, append([]byte(nil), e.Member...))
			switch t {
			case storage.TypeHash:
				o.Items = append(o.Items, append([]byte(nil), e.Value...))
			case storage.TypeZSet:
				o.Scores = append(o.Scores, e.Score)
			}
			return true
		})
		return o, err
	case storage.TypeStream:
		return readStreamObject(st, db, key)
	}
	return nil, errors.New("actor: cannot dump a key of type " + t.String())
}

func errOr(err error, text string) error {
	if err != nil {
		return err
	}
	return errors.New(text)
}

func toRDBID(id storage.StreamID) rdb.StreamID { return rdb.StreamID{Ms: id.Ms, Seq: id.Seq} }
func fromRDBID(id rdb.StreamID) storage.StreamID {
	return storage.StreamID{Ms: id.Ms, Seq: id.Seq}
}

func readStreamObject(st *storage.Store, db int, key []byte) (*rdb.Object, error) {
	s, err := st.OpenStream(db, key)
	if err != nil || s == nil {
		return nil, errOr(err, "actor: key vanished while dumped")
	}
	out := &rdb.Stream{
		Length: uint64(s.Len), LastID: toRDBID(s.Last), MaxDeletedID: toRDBID(s.MaxDeleted),
		EntriesAdded: uint64(s.EntriesAdded),
	}
	err = st.StreamRange(s, storage.StreamID{}, storage.MaxStreamID, false, 0, func(e *storage.StreamEntry) bool {
		fields := make([][]byte, len(e.Fields))
		for i, f := range e.Fields {
			fields[i] = append([]byte(nil), f...)
		}
		out.Entries = append(out.Entries, rdb.StreamEntry{ID: toRDBID(e.ID), Fields: fields})
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(out.Entries) > 0 {
		out.FirstID = out.Entries[0].ID
	}
	groups, err := st.Groups(s)
	if err != nil {
		return nil, err
	}
	for i := range groups {
		g := &groups[i]
		rg := rdb.StreamGroup{Name: g.Name, LastID: toRDBID(g.Last), EntriesRead: g.EntriesRead}
		pel, err := st.PendingRange(s, g, nil, storage.StreamID{}, storage.MaxStreamID, maxInt64, 0)
		if err != nil {
			return nil, err
		}
		for _, p := range pel {
			rg.Pending = append(rg.Pending, rdb.StreamPending{ID: toRDBID(p.ID), DeliveryTime: p.Delivered, DeliveryCount: uint64(p.Count), Consumer: p.Consumer})
		}
		cons, err := st.Consumers(s, g)
		if err != nil {
			return nil, err
		}
		for _, cn := range cons {
			rg.Consumers = append(rg.Consumers, rdb.StreamConsumer{Name: cn.Name, SeenTime: cn.Seen, ActiveTime: -1})
		}
		out.Groups = append(out.Groups, rg)
	}
	return &rdb.Object{Kind: rdb.KindStream, Stream: out}, nil
}

const maxInt64 = 1<<63 - 1

// writeObject creates key from o; no live key of that name exists.
// expireAt is unix ms, 0 for none.
func writeObject(st *storage.Store, db int, key []byte, o *rdb.Object, expireAt int64) error {
	var err error
	switch o.Kind {
	case rdb.KindString:
		err = st.SetString(db, key, o.Str, expireAt, false)
		return err
	case rdb.KindList:
		_, err = st.ListPush(db, key, storage.Right, o.Items, false)
	case rdb.KindHash, rdb.KindSet, rdb.KindZSet:
		t := map[rdb.Kind]storage.Type{rdb.KindHash: storage.TypeHash, rdb.KindSet: storage.TypeSet, rdb.KindZSet: storage.TypeZSet}[o.Kind]
		var coll *storage.Coll
		if coll, err = st.OpenOrCreateColl(db, key, t); err != nil {
			return err
		}
		switch o.Kind {
		case rdb.KindHash:
			for i := 0; i+1 < len(o.Items) && err == nil; i += 2 {
				_, err = st.HashSet(coll, o.Items[i], o.Items[i+1], storage.HashReplace)
			}
		case rdb.KindSet:
			for i := 0; i < len(o.Items) && err == nil; i++ {
				_, err = st.SetAdd(coll, o.Items[i])
			}
		case rdb.KindZSet:
			for i := 0; i < len(o.Items) && err == nil; i++ {
				var found bool
				if _, found, err = st.ZScore(coll, o.Items[i]); err == nil {
					err = st.ZSet(coll, o.Items[i], o.Scores[i], found)
				}
			}
		}
	case rdb.KindStream:
		err = writeStream(st, db, key, o.Stream)
	default:
		return errors.New("actor: cannot store a value of kind " + o.Kind.String())
	}
	if err == nil && expireAt != 0 {
		err = st.SetExpire(db, key, expireAt)
	}
	return err
}

func writeStream(st *storage.Store, db int, key []byte, in *rdb.Stream) error {
	s, err := st.CreateStream(db, key)
	if err != nil {
		return err
	}
	for _, e := range in.Entries {
		if err := st.StreamAdd(s, fromRDBID(e.ID), e.Fields); err != nil {
			return err
		}
	}
	s.Last, s.MaxDeleted, s.EntriesAdded = fromRDBID(in.LastID), fromRDBID(in.MaxDeletedID), int64(in.EntriesAdded)
	if err := st.StreamSetMeta(s); err != nil {
		return err
	}
	for _, g := range in.Groups {
		sg := storage.StreamGroup{Name: g.Name, Last: fromRDBID(g.LastID), EntriesRead: g.EntriesRead}
		if _, err := st.CreateGroup(s, sg); err != nil {
			return err
		}
		for _, cn := range g.Consumers {
			if _, err := st.CreateConsumer(s, &sg, cn.Name, cn.SeenTime); err != nil {
				return err
			}
		}
		for _, p := range g.Pending {
			sp := storage.StreamPending{ID: fromRDBID(p.ID), Consumer: p.Consumer, Delivered: p.DeliveryTime, Count: int64(p.DeliveryCount)}
			if err := st.SetPending(s, &sg, sp); err != nil {
				return err
			}
		}
	}
	return nil
}
