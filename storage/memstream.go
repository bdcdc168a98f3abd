package storage

import (
	"github.com/cellar-db/cellar/storage/object"
)

// How the in-memory engine's streams map to their tables (schema.go,
// migration 8): a stream is loaded whole, its metadata row, entries in ID
// order, groups, consumers and PEL; a flush writes what its StreamDelta
// names. ID parts are stored shifted (col), entries' fields packed by
// encodeFields (streams.go). A stream's values are never blob refs.

const (
	sqlStreamMeta      = "SELECT last_ms, last_seq, del_ms, del_seq, entries_added FROM streams WHERE id = ?1"
	sqlStreamEntries   = "SELECT ms, seq, fields FROM stream_entries WHERE id = ?1 ORDER BY ms, seq"
	sqlStreamGroups    = "SELECT name, last_ms, last_seq, entries_read FROM stream_groups WHERE id = ?1 ORDER BY name"
	sqlStreamConsumers = "SELECT grp, name, seen FROM stream_consumers WHERE id = ?1 ORDER BY grp, name"
	sqlStreamPEL       = "SELECT grp, ms, seq, consumer, delivered, count FROM stream_pel WHERE id = ?1 ORDER BY grp, ms, seq"

	sqlStreamPutMeta     = "INSERT OR REPLACE INTO streams (id, last_ms, last_seq, del_ms, del_seq, entries_added) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
	sqlStreamTrim        = "DELETE FROM stream_entries WHERE id = ?1 AND (ms, seq) <= (?2, ?3)"
	sqlStreamDelEntry    = "DELETE FROM stream_entries WHERE id = ?1 AND ms = ?2 AND seq = ?3"
	sqlStreamPutEntry    = "INSERT OR REPLACE INTO stream_entries (id, ms, seq, fields) VALUES (?1, ?2, ?3, ?4)"
	sqlStreamPutGroup    = "INSERT OR REPLACE INTO stream_groups (id, name, last_ms, last_seq, entries_read) VALUES (?1, ?2, ?3, ?4, ?5)"
	sqlStreamPutConsumer = "INSERT OR REPLACE INTO stream_consumers (id, grp, name, seen) VALUES (?1, ?2, ?3, ?4)"
	sqlStreamDelConsumer = "DELETE FROM stream_consumers WHERE id = ?1 AND grp = ?2 AND name = ?3"
	sqlStreamPutPending  = "INSERT OR REPLACE INTO stream_pel (id, grp, ms, seq, consumer, delivered, count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
	sqlStreamDelPending  = "DELETE FROM stream_pel WHERE id = ?1 AND grp = ?2 AND ms = ?3 AND seq = ?4"
)

// The deletes of every row of one group (?2) of a stream, and of every row
// of a stream.
var (
	sqlStreamDropGroup = []string{
		"DELETE FROM stream_groups WHERE id = ?1 AND name = ?2",
		"DELETE FROM stream_consumers WHERE id = ?1 AND grp = ?2",
		"DELETE FROM stream_pel WHERE id = ?1 AND grp = ?2",
	}
	sqlStreamDrop = []string{
		"DELETE FROM streams WHERE id = ?1",
		"DELETE FROM stream_entries WHERE id = ?1",
		"DELETE FROM stream_groups WHERE id = ?1",
		"DELETE FROM stream_consumers WHERE id = ?1",
		"DELETE FROM stream_pel WHERE id = ?1",
	}
)

// colID reads the ID stored in columns i and i+1; bindID binds id as
// parameters i and i+1.
func colID(st *stmt, i int) object.StreamID {
	return object.StreamID{Ms: uncol(st.colInt(i)), Seq: uncol(st.colInt(i + 1))}
}

func bindID(st *stmt, i int, id object.StreamID) {
	st.int(i, col(id.Ms))
	st.int(i+1, col(id.Seq))
}

// loadStream reads stream id whole. A stream without its metadata row is
// corrupt.
func loadStream(r *sqlc, id int64) (*object.Stream, error) {
	st := r.q(sqlStreamMeta)
	st.int(1, id)
	row, err := st.step()
	if err != nil || !row {
		st.reset()
		if err == nil {
			err = &Error{Code: codeCorrupt, Msg: "a stream has no metadata row"}
		}
		return nil, err
	}
	l := object.LoadStream(object.StreamMeta{Last: colID(st, 0), MaxDeleted: colID(st, 2), EntriesAdded: st.colInt(4)})
	st.reset()
	err = eachRow(r, sqlStreamEntries, id, func(st *stmt) error {
		// The fields alias their row's one buffer.
		fields, err := decodeFields(st.colBlob(2, nil), nil)
		l.Entry(object.StreamEntry{ID: colID(st, 0), Fields: fields})
		return err
	})
	if err != nil {
		return nil, err
	}
	err = eachRow(r, sqlStreamGroups, id, func(st *stmt) error {
		l.Group(object.StreamGroup{Name: nonNil(st.colBlob(0, nil)), Last: colID(st, 1), EntriesRead: st.colInt(3)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	var grp []byte
	err = eachRow(r, sqlStreamConsumers, id, func(st *stmt) error {
		grp = st.colBlob(0, grp[:0])
		l.Consumer(grp, object.StreamConsumer{Name: nonNil(st.colBlob(1, nil)), Seen: st.colInt(2)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachRow(r, sqlStreamPEL, id, func(st *stmt) error {
		grp = st.colBlob(0, grp[:0])
		p := object.StreamPending{ID: colID(st, 1), Consumer: nonNil(st.colBlob(3, nil)), Delivered: st.colInt(4), Count: st.colInt(5)}
		l.Pending(grp, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.Stream(), nil
}

// nonNil is b, or an empty name for SQLite's empty blob.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// eachRow calls fn with every row of the query sql bound to id.
func eachRow(r *sqlc, sql string, id int64, fn func(st *stmt) error) error {
	st := r.q(sql)
	defer st.reset()
	st.int(1, id)
	for {
		row, err := st.step()
		if err != nil || !row {
			return err
		}
		if err := fn(st); err != nil {
			return err
		}
	}
}

// flushStream writes d, the changes of stream id, in the caller's
// transaction, in the order StreamDelta's doc gives.
func flushStream(w *sqlc, id int64, d *object.StreamDelta) error {
	if d.All {
		if err := dropStream(w, id); err != nil {
			return err
		}
	}
	if d.MetaChanged {
		st := w.q(sqlStreamPutMeta)
		st.int(1, id)
		bindID(st, 2, d.Meta.Last)
		bindID(st, 4, d.Meta.MaxDeleted)
		st.int(6, d.Meta.EntriesAdded)
		if err := st.exec(); err != nil {
			return err
		}
	}
	if d.Trimmed {
		st := w.q(sqlStreamTrim)
		st.int(1, id)
		bindID(st, 2, d.TrimTo)
		if err := st.exec(); err != nil {
			return err
		}
	}
	for _, e := range d.Gone {
		st := w.q(sqlStreamDelEntry)
		st.int(1, id)
		bindID(st, 2, e)
		if err := st.exec(); err != nil {
			return err
		}
	}
	var buf []byte
	err := d.EachEntry(func(e *object.StreamEntry) error {
		buf = encodeFields(buf[:0], e.Fields)
		st := w.q(sqlStreamPutEntry)
		st.int(1, id)
		bindID(st, 2, e.ID)
		st.blob(4, buf)
		return st.exec()
	})
	if err != nil {
		return err
	}
	for _, name := range d.DroppedGroups {
		if err := dropStreamGroup(w, id, name); err != nil {
			return err
		}
	}
	for i := range d.Groups {
		if err := flushStreamGroup(w, id, &d.Groups[i]); err != nil {
			return err
		}
	}
	return nil
}

// flushStreamGroup writes one group's changes.
func flushStreamGroup(w *sqlc, id int64, g *object.GroupDelta) error {
	name := g.Group.Name
	if g.All {
		if err := dropStreamGroup(w, id, name); err != nil {
			return err
		}
	}
	if g.All || g.RowChanged {
		st := w.q(sqlStreamPutGroup)
		st.int(1, id)
		st.blob(2, name)
		bindID(st, 3, g.Group.Last)
		st.int(5, g.Group.EntriesRead)
		if err := st.exec(); err != nil {
			return err
		}
	}
	for _, c := range g.GoneConsumers {
		st := w.q(sqlStreamDelConsumer)
		st.int(1, id)
		st.blob(2, name)
		st.blob(3, c)
		if err := st.exec(); err != nil {
			return err
		}
	}
	for _, p := range g.GonePending {
		st := w.q(sqlStreamDelPending)
		st.int(1, id)
		st.blob(2, name)
		bindID(st, 3, p)
		if err := st.exec(); err != nil {
			return err
		}
	}
	err := g.EachConsumer(func(c *object.StreamConsumer) error {
		st := w.q(sqlStreamPutConsumer)
		st.int(1, id)
		st.blob(2, name)
		st.blob(3, c.Name)
		st.int(4, c.Seen)
		return st.exec()
	})
	if err != nil {
		return err
	}
	return g.EachPending(func(p *object.StreamPending) error {
		st := w.q(sqlStreamPutPending)
		st.int(1, id)
		st.blob(2, name)
		bindID(st, 3, p.ID)
		st.blob(5, p.Consumer)
		st.int(6, p.Delivered)
		st.int(7, p.Count)
		return st.exec()
	})
}

// dropStreamGroup deletes every row of one group of stream id.
func dropStreamGroup(w *sqlc, id int64, name []byte) error {
	for _, sql := range sqlStreamDropGroup {
		st := w.q(sql)
		st.int(1, id)
		st.blob(2, name)
		if err := st.exec(); err != nil {
			return err
		}
	}
	return nil
}

// dropStream deletes every row of stream id in every stream table (its key
// is gone, or its rows are rewritten).
func dropStream(w *sqlc, id int64) error {
	for _, sql := range sqlStreamDrop {
		st := w.q(sql)
		st.int(1, id)
		if err := st.exec(); err != nil {
			return err
		}
	}
	return nil
}
