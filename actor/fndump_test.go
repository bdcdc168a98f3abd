package actor

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// lzfCompress's output decompresses to its input, for inputs from
// incompressible to runs of one byte, and every length around liblzf's
// limits (literal runs of 32, back references of 264).
func TestLZFRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 2000; n++ {
		size := r.IntN(3000) + 1
		alphabet := 1 + r.IntN(256)
		in := make([]byte, size)
		for i := range in {
			if i > 8 && r.IntN(4) == 0 {
				in[i] = in[i-1-r.IntN(8)] // repeats, for back references
			} else {
				in[i] = byte(r.IntN(alphabet))
			}
		}
		z := lzfCompress(in, len(in)+len(in)/32+8)
		if z == nil {
			t.Fatalf("size %d: no room", size)
		}
		out, ok := lzfDecompress(z, len(in))
		if !ok || !bytes.Equal(out, in) {
			t.Fatalf("size %d alphabet %d: round trip failed", size, alphabet)
		}
	}
}
