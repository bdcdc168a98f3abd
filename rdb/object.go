package rdb

import "fmt"

// Kind is the type of a decoded value, as TYPE names it.
type Kind uint8

// The kinds of values.
const (
	KindString Kind = iota + 1
	KindList
	KindSet
	KindZSet
	KindHash
	KindStream
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindHash:
		return "hash"
	case KindStream:
		return "stream"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Object is one decoded value.
//   - string: Str.
//   - list: Items, head to tail.
//   - set: Items, the members.
//   - sorted set: Items the members, Scores their scores (same index).
//   - hash: Items, field and value alternating.
//   - stream: Stream.
//
// Byte slices are the Object's own (never aliased by the decoder
// afterwards).
type Object struct {
	Kind   Kind
	Str    []byte
	Items  [][]byte
	Scores []float64
	Stream *Stream
	// Encoding is the RDB type byte the value was read from (TypeXxx), for
	// tests and log lines.
	Encoding byte
}

// Len is the number of elements (1 for a string; entries for a stream).
func (o *Object) Len() int {
	switch o.Kind {
	case KindString:
		return 1
	case KindHash:
		return len(o.Items) / 2
	case KindStream:
		return len(o.Stream.Entries)
	}
	return len(o.Items)
}

// Size estimates the bytes the value holds, for batching loads.
func (o *Object) Size() int {
	n := len(o.Str) + 8*len(o.Scores)
	for _, it := range o.Items {
		n += len(it) + 16
	}
	if o.Stream != nil {
		for _, e := range o.Stream.Entries {
			for _, f := range e.Fields {
				n += len(f) + 16
			}
		}
	}
	return n
}

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// Stream is a decoded stream.
type Stream struct {
	Entries []StreamEntry // in ID order, deleted entries left out
	// Length is the number of live entries (equal to len(Entries)).
	Length       uint64
	LastID       StreamID
	FirstID      StreamID
	MaxDeletedID StreamID
	EntriesAdded uint64
	Groups       []StreamGroup
}

// StreamEntry is one entry: its ID and field/value pairs, alternating.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
}

// StreamGroup is a consumer group.
type StreamGroup struct {
	Name   []byte
	LastID StreamID
	// EntriesRead is the group's read counter; -1 when unknown (files of
	// format 1, or a counter Redis itself lost).
	EntriesRead int64
	Pending     []StreamPending // in ID order
	Consumers   []StreamConsumer
}

// StreamPending is one entry of a group's pending entries list.
type StreamPending struct {
	ID            StreamID
	DeliveryTime  int64 // unix ms
	DeliveryCount uint64
	Consumer      []byte // the consumer that owns it
}

// StreamConsumer is one consumer of a group.
type StreamConsumer struct {
	Name       []byte
	SeenTime   int64 // unix ms
	ActiveTime int64 // unix ms; -1 when the file does not say (before format 3)
	Pending    []StreamID
}

// RDB object type bytes (src/rdb.h).
const (
	TypeString             = 0
	TypeList               = 1
	TypeSet                = 2
	TypeZSet               = 3
	TypeHash               = 4
	TypeZSet2              = 5
	TypeModule             = 6
	TypeModule2            = 7
	TypeHashZipmap         = 9
	TypeListZiplist        = 10
	TypeSetIntset          = 11
	TypeZSetZiplist        = 12
	TypeHashZiplist        = 13
	TypeListQuicklist      = 14
	TypeStreamListpacks    = 15
	TypeHashListpack       = 16
	TypeZSetListpack       = 17
	TypeListQuicklist2     = 18
	TypeStreamListpacks2   = 19
	TypeSetListpack        = 20
	TypeStreamListpacks3   = 21
	opFunction2            = 245
	opFunction             = 246
	opModuleAux            = 247
	opIdle                 = 248
	opFreq                 = 249
	opAux                  = 250
	opResizeDB             = 251
	opExpireMs             = 252
	opExpireSec            = 253
	opSelectDB             = 254
	opEOF                  = 255
	maxKnownType           = TypeStreamListpacks3
	quicklistNodePlain     = 1
	quicklistNodePacked    = 2
	streamItemDeleted      = 1
	streamItemSameFields   = 2
	encInt8, encInt16      = 0, 1
	encInt32, encLZF       = 2, 3
	lenEncoded             = 3
	len6, len14, len32or64 = 0, 1, 2
)

// Version is the RDB version Cellar writes in DUMP payloads (Redis 7.0's),
// and the newest it accepts.
const Version = 10

// MaxVersion is the newest RDB file version the Reader accepts: Redis 7.2
// writes 11, and its new encodings (set listpacks, stream format 3) are read.
const MaxVersion = 11
