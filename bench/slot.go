package main

import "strings"

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// crcTable is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0),
// the checksum Redis Cluster hashes keys with, by byte.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// keySlot is the Redis Cluster slot of key, as CLUSTER KEYSLOT computes
// it: the CRC16 of its hash tag (the text between the first '{' and the
// next '}', when not empty), or of the whole key, modulo 16384. -fault
// failover uses it to tell which master owns each of a million keys
// without a round trip per key; it checks itself against CLUSTER KEYSLOT.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var c uint16
	for i := 0; i < len(key); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^key[i]]
	}
	return int(c) % numSlots
}
