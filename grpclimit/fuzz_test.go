package grpclimit

import "testing"

// FuzzParseRules checks that no rules file panics the parser, and that a
// file it accepts can be put in force.
func FuzzParseRules(f *testing.F) {
	f.Add([]byte(fullYAML))
	f.Add([]byte(rulesV1))
	f.Add([]byte("rules:\n  - {name: a, method: /s.S/*, tier: t, key: [user], limits: [{rate: 1, period: 1s}], max_delay: 1s, shadow: true, per_message: true}\n"))
	f.Add([]byte("rules:\n  - {name: a, route: /a, limits: [{rate: 1, period: 1s}]}\n"))
	f.Add([]byte("rules: &a [*a]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseRules(data)
		if err != nil {
			return
		}
		if err := rs.Validate(); err != nil {
			t.Fatalf("ParseRules accepted a set Validate refuses: %v", err)
		}
	})
}
