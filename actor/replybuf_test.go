package actor

import "testing"

// replyBuf gives at least the capacity asked for, from the pool between
// its bounds: a buffer handed back is handed out again for any size of
// its class or below, emptied; sizes outside the bounds are not kept.
func TestReplyBufPool(t *testing.T) {
	for _, n := range []int{0, 64, 1<<replyPoolMinShift - 1, 1 << replyPoolMinShift, 100 << 10, replyPoolMax, replyPoolMax + 1} {
		if b := replyBuf(n); cap(b) < n || len(b) != 0 {
			t.Fatalf("replyBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
	b := replyBuf(100 << 10) // class 128 KiB
	if cap(b) != 128<<10 {
		t.Fatalf("replyBuf(100 KiB) has cap %d, want its class's 128 KiB", cap(b))
	}
	// sync.Pool may drop what it is given (a collection, or at random
	// under the race detector): of 100 releases, some must come back.
	reused := 0
	for range 100 {
		b = append(b[:0], "reply"...)
		ReleaseReply(b)
		again := replyBuf(70 << 10)
		if cap(again) != 128<<10 || len(again) != 0 {
			t.Fatalf("after a release, replyBuf(70 KiB) has len %d cap %d", len(again), cap(again))
		}
		if &again[:1][0] == &b[0] {
			reused++
		}
		b = again
	}
	if reused == 0 {
		t.Fatal("no released buffer was handed out again")
	}
	ReleaseReply(make([]byte, 10))       // too small: not kept
	ReleaseReply(make([]byte, 0, 8<<20)) // too large: not kept
}
