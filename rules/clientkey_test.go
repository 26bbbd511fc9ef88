package rules

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	keys, err := newKeys([]string{"10.0.0.0/8"}, "X-Forwarded-For", 0, 0, func(k string) bool { return k != "revoked" })
	if err != nil {
		t.Fatal(err)
	}
	alice := func() (string, bool) { return "alice", true }
	nobody := func() (string, bool) { return "", false }
	const hash = "2bb80d537b1da3e38bd30361aa855686" // SHA-256("secret")[:16]
	tests := []struct {
		name string
		src  KeySource
		req  Request
		user func() (string, bool)
		want string
	}{
		{"api key first", 0, Request{APIKey: " secret ", Peer: "198.51.100.1:1"}, alice, "p:key:" + hash},
		{"revoked api key", 0, Request{APIKey: "revoked", Peer: "198.51.100.1:1"}, alice, "p:user:alice"},
		{"user", 0, Request{Peer: "198.51.100.1:1"}, alice, "p:user:alice"},
		{"anonymous", 0, Request{Peer: "198.51.100.1:1"}, nobody, "p:ip:198.51.100.1"},
		{"no user source", KeyUser, Request{Peer: "198.51.100.1:1"}, nil, "p:ip:198.51.100.1"},
		{"ip only", KeyIP, Request{APIKey: "secret", Peer: "198.51.100.1:1"}, alice, "p:ip:198.51.100.1"},
		{"forwarded", KeyIP, Request{Peer: "10.0.0.1:1", Forwarded: []string{"1.1.1.1, 203.0.113.7"}}, nil, "p:ip:203.0.113.7"},
		{"IPv6 /64", KeyIP, Request{Peer: "[2001:db8:1:2:3:4:5:6]:1"}, nil, "p:ip:2001:db8:1:2::/64"},
		{"no address", KeyIP, Request{Peer: "@"}, nil, "p:ip:unknown"},
		{"outgoing, api key", 0, Request{APIKey: "secret", Outgoing: true}, nil, "p:key:" + hash},
		{"outgoing, user", 0, Request{Outgoing: true}, alice, "p:user:alice"},
		{"outgoing, neither", 0, Request{Outgoing: true}, nobody, "p:all"},
		{"long user hashed", KeyUser, Request{}, func() (string, bool) { return strings.Repeat("u", 65), true }, "p:userh:" + Digest(strings.Repeat("u", 65))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keys.Key("p:", tt.src, &tt.req, tt.user); got != tt.want {
				t.Errorf("Key(%v, %+v) = %q, want %q", tt.src, tt.req, got, tt.want)
			}
		})
	}
}

func TestNewKeysErrors(t *testing.T) {
	tests := []struct {
		name    string
		trusted []string
		v4, v6  int
		want    string
	}{
		{"trust everyone", []string{"0.0.0.0/0"}, 0, 0, "trusts every address"},
		{"malformed proxy", []string{"10.0.0.0/40"}, 0, 0, `trusted proxy "10.0.0.0/40"`},
		{"IPv4 prefix", nil, 33, 0, "IPv4Prefix 33 outside [1, 32]"},
		{"IPv6 prefix", nil, 0, -1, "IPv6Prefix -1 outside [1, 128]"},
	}
	for _, tt := range tests {
		if _, err := newKeys(tt.trusted, "X-Forwarded-For", tt.v4, tt.v6, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: newKeys = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestParseSource(t *testing.T) {
	tests := []struct {
		in   any
		want KeySource
		err  string
	}{
		{nil, 0, ""},
		{"ip", KeyIP, ""},
		{[]any{"user", "api-key"}, KeyUser | KeyAPIKey, ""},
		{[]any{}, 0, "empty list"},
		{[]any{5}, 0, "is not a name"},
		{"peer", 0, `unknown source "peer"`},
		{5, 0, "want api-key, user, ip"},
	}
	for _, tt := range tests {
		got, err := parseKeyField(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseKeyField(%v) = %v, %v; want an error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseKeyField(%v) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
