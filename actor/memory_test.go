package actor

import "testing"

// The collector's percent stays Go's default for a small heap, then falls
// so that the heap grows by about gcHeadroom, never below minGCPercent.
func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{gcHeadroom, 100},
		{2 * gcHeadroom, 50},
		{3 * gcHeadroom, 33},
		{4 * gcHeadroom, minGCPercent},
		{100 * gcHeadroom, minGCPercent},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}
