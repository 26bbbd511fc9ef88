package rules

import "testing"

func TestKeySourceString(t *testing.T) {
	for k, want := range map[KeySource]string{
		0:                           "api-key|user|ip",
		KeyIP:                       "ip",
		KeyUser | KeyIP:             "user|ip",
		KeyIP | KeyAPIKey:           "api-key|ip",
		KeyAPIKey | KeyUser | KeyIP: "api-key|user|ip",
		KeyUser | KeySource(1<<6):   "user|KeySource(0x40)",
	} {
		if got := k.String(); got != want {
			t.Errorf("KeySource(%#x).String() = %q, want %q", uint8(k), got, want)
		}
	}
}

// TestParseKeySource: each source's name parses back to it; nothing else
// parses.
func TestParseKeySource(t *testing.T) {
	for _, k := range []KeySource{KeyAPIKey, KeyUser, KeyIP} {
		if got, ok := ParseKeySource(k.String()); !ok || got != k {
			t.Errorf("ParseKeySource(%q) = %v, %v; want %v", k.String(), got, ok, k)
		}
	}
	for _, name := range []string{"", "IP", "api_key", "user|ip", "apikey"} {
		if got, ok := ParseKeySource(name); ok {
			t.Errorf("ParseKeySource(%q) = %v, true; want false", name, got)
		}
	}
}
