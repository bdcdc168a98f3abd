package actor

import "testing"

// The collector's percent lets the heap grow by about the headroom between
// cycles: above Go's default for a heap smaller than the headroom (up to
// maxGCPercent), below it for a larger one (never below minGCPercent).
func TestGCPercentFor(t *testing.T) {
	for _, h := range []uint64{16 << 20, defaultGCHeadroom} {
		for _, c := range []struct {
			live uint64
			want int
		}{
			{0, maxGCPercent},
			{h / 16, maxGCPercent},
			{h / 4, 400},
			{h / 2, 200},
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
