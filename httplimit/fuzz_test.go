package httplimit

import "testing"

// FuzzParseRules checks that no rules file panics the parser, and that a
// file it accepts can be put in force.
func FuzzParseRules(f *testing.F) {
	f.Add([]byte(fullYAML))
	f.Add([]byte(rulesV1))
	f.Add([]byte("rules:\n  - {name: a, route: /a/{x}, tier: t, key: [user], limits: [{rate: 1, period: 1s}], max_delay: 1s, shadow: true}\n"))
	f.Add([]byte("default: {limits: [{algorithm: leaky-bucket, rate: 3, period: 1s, burst: 9}]}\n"))
	f.Add([]byte("rules: &a [*a]\n"))
	f.Add([]byte("rules:\n  - name: a\n    route: \"GET /{$}\"\n    limits: [{rate: 1, period: 1h}]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseRules(data)
		if err != nil {
			return
		}
		if _, _, err := compile(rs, DefaultPrefix, nil); err != nil {
			t.Fatalf("ParseRules accepted a set compile refuses: %v", err)
		}
	})
}
