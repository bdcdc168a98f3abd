package actor

import "testing"

// The collector's percent stays Go's default for a small heap, then falls
// so that the heap grows by about the headroom, never below minGCPercent.
func TestGCPercentFor(t *testing.T) {
	for _, h := range []uint64{16 << 20, defaultGCHeadroom} {
		for _, c := range []struct {
			live uint64
			want int
		}{
			{0, 100},
			{h, 100},
			{2 * h, 50},
			{3 * h, 33},
			{4 * h, minGCPercent},
			{100 * h, minGCPercent},
		} {
			if got := gcPercentFor(c.live, h); got != c.want {
				t.Errorf("gcPercentFor(%d, %d) = %d, want %d", c.live, h, got, c.want)
			}
		}
	}
}
