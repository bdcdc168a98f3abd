package rdb

// Redis checksums RDB files and DUMP payloads with CRC-64/Jones: the
// polynomial 0xad93d23594c935a9, reflected, initial value 0 and no final
// xor (Redis's src/crc64.c). Go's hash/crc64 complements before and after,
// so the table is built here and applied slicing-by-8, eight bytes a step.

const jonesReflected = 0x95ac9329ac4bc9b5 // 0xad93d23594c935a9 bit-reversed

var crcTable = func() (t [8][256]uint64) {
	for i := range 256 {
		c := uint64(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ jonesReflected
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// CRC64 continues the checksum crc over p (start with 0).
func CRC64(crc uint64, p []byte) uint64 {
	for len(p) >= 8 {
		crc ^= uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		crc = crcTable[7][crc&0xff] ^ crcTable[6][crc>>8&0xff] ^ crcTable[5][crc>>16&0xff] ^
			crcTable[4][crc>>24&0xff] ^ crcTable[3][crc>>32&0xff] ^ crcTable[2][crc>>40&0xff] ^
			crcTable[1][crc>>48&0xff] ^ crcTable[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = crcTable[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}
