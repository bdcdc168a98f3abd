package actor

import (
	"math/bits"
	"sync"
)

// Reply buffers. A batch's replies are built in one buffer, which its
// loop writes to the socket (gnet copies what the socket does not take at
// once) and then hands back (ReleaseReply): a pipeline of range reads
// (LRANGE, ZRANGE, HGETALL) reused memory instead of allocating a new
// buffer a batch, and growing it past its first size, for the collector
// to clear. Buffers from replyPoolMin to replyPoolMax bytes are kept by
// power-of-two class; smaller ones are cheap to allocate, larger ones
// rare.
const (
	replyPoolMinShift = 14 // 16 KiB
	replyPoolMaxShift = 22 // 4 MiB
	replyPoolMax      = 1 << replyPoolMaxShift
)

var replyPools [replyPoolMaxShift - replyPoolMinShift + 1]sync.Pool

// replyBuf returns an empty buffer of at least n bytes of capacity.
func replyBuf(n int) []byte {
	if n < 1<<replyPoolMinShift || n > replyPoolMax {
		return make([]byte, 0, n)
	}
	k := bits.Len(uint(n - 1)) // 1<<k >= n
	if b, ok := replyPools[k-replyPoolMinShift].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<k)
}

// ReleaseReply takes back the buffer of a Completion marked Recycle once
// its loop has written it: nothing may read b afterwards.
func ReleaseReply(b []byte) {
	c := cap(b)
	if c < 1<<replyPoolMinShift || c > replyPoolMax {
		return
	}
	k := bits.Len(uint(c)) - 1 // 1<<k <= c
	b = b[:0]
	replyPools[k-replyPoolMinShift].Put(&b)
}
