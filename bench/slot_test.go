package main

import "testing"

// TestKeySlot checks keySlot against slots Redis computes (CLUSTER
// KEYSLOT on redis-server 7.0), hash tags included.
func TestKeySlot(t *testing.T) {
	tests := []struct {
		key  string
		want int
	}{
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"123456789", 12739}, // CRC16/XMODEM's check value 0x31C3, mod 16384
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363}, // an empty tag: the whole key is hashed
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
	}
	for _, tt := range tests {
		if got := keySlot(tt.key); got != tt.want {
			t.Errorf("keySlot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}
