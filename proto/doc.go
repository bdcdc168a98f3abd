// Package proto reads and writes RESP, the Redis serialization protocol, in
// its two versions: RESP2 and RESP3 (selected per connection by HELLO).
//
// It owns nothing but bytes. Parsing is zero-copy: the arguments it returns
// alias the caller's buffer, so a caller that keeps them past the next read
// must copy them (the loop makes that copy in one place, when a batch crosses
// to the actor). Encoding is append-style: every Writer method appends to one
// growing buffer and allocates only when that buffer grows.
//
// The client's side is ReadReply: one complete reply, any RESP2 or RESP3
// type, with its exact bytes and its structure, copied out of the reader.
//
// proto knows nothing of sockets, SQLite or commands. Its functions are safe
// for concurrent use; a Parser or Writer value belongs to one goroutine.
//
// Error texts for malformed input are Redis 7's own ("Protocol error: ...").
package proto
