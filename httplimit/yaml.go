package httplimit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

// MaxRulesFileSize bounds a rules file.
const MaxRulesFileSize = 1 << 20

// file is the YAML form of a RuleSet.
type file struct {
	Rules   []fileRule `yaml:"rules"`
	Default *fileRule  `yaml:"default"`
}

type fileRule struct {
	Name     string      `yaml:"name"`
	Route    string      `yaml:"route"`
	Tier     string      `yaml:"tier"`
	Key      any         `yaml:"key"` // a source or a list of them
	Limits   []fileLimit `yaml:"limits"`
	MaxDelay string      `yaml:"max_delay"`
	Shadow   bool        `yaml:"shadow"`
}

type fileLimit struct {
	Name      string `yaml:"name"`
	Algorithm string `yaml:"algorithm"`
	Rate      int64  `yaml:"rate"`
	Period    string `yaml:"period"`
	Burst     int64  `yaml:"burst"`
}

// ParseRules parses and validates a rules file:
//
//	rules:
//	  - name: login                  # required, unique: [A-Za-z0-9._-]{1,64}
//	    route: "POST /login"         # ServeMux pattern; omit for every route
//	    tier: ""                     # omit for every tier
//	    key: [ip]                    # api-key, user, ip; default all three
//	    limits:                      # 1 to 16, charged together
//	      - rate: 5                  # units per period, required
//	        period: 1m               # Go duration, required
//	        algorithm: token-bucket  # default; leaky-bucket, fixed-window,
//	                                 # sliding-window-log, sliding-window-counter
//	        burst: 5                 # buckets only; default rate
//	        name: per-minute         # keys the budget; default <rule>#<index>
//	    max_delay: 1s                # LeakyBucket only; default 1s
//	    shadow: false                # dry run
//	default:                         # optional; name defaults to "default"
//	  limits: [{rate: 600, period: 1m}]
//
// Unknown fields, duplicate keys and a file without any rule are errors
// (an empty file is more often a truncated write than an intent). Errors
// wrap ErrInvalidRules and name the line or the rule.
func ParseRules(data []byte) (RuleSet, error) {
	var f file
	if err := decode(data, &f); err != nil {
		return RuleSet{}, err
	}
	if len(f.Rules) == 0 && f.Default == nil {
		return RuleSet{}, invalid("no rules and no default")
	}
	var rs RuleSet
	for i, fr := range f.Rules {
		r, err := fr.rule()
		if err != nil {
			return RuleSet{}, invalid("rule %d (%q): %w", i+1, fr.Name, err)
		}
		rs.Rules = append(rs.Rules, r)
	}
	if f.Default != nil {
		r, err := f.Default.rule()
		if err != nil {
			return RuleSet{}, invalid("default rule: %w", err)
		}
		rs.Default = &r
	}
	if err := rs.Validate(); err != nil {
		return RuleSet{}, err
	}
	return rs, nil
}

// decode unmarshals a rules file strictly. The YAML parser is not ours: a
// panic in it is an invalid file, never a crashed server.
func decode(data []byte, f *file) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = invalid("parsing YAML: %v", p)
		}
	}()
	if err := yaml.UnmarshalWithOptions(data, f, yaml.DisallowUnknownField()); err != nil {
		return invalid("%s", strings.TrimSpace(yaml.FormatError(err, false, false)))
	}
	return nil
}

// LoadRules reads and parses a rules file (see ParseRules) of at most
// MaxRulesFileSize bytes.
func LoadRules(path string) (RuleSet, error) {
	data, err := readRules(path)
	if err != nil {
		return RuleSet{}, err
	}
	return ParseRules(data)
}

func readRules(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxRulesFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxRulesFileSize {
		return nil, invalid("%s is larger than %d bytes", path, MaxRulesFileSize)
	}
	return data, nil
}

func (fr fileRule) rule() (Rule, error) {
	r := Rule{Name: fr.Name, Route: fr.Route, Tier: fr.Tier, Shadow: fr.Shadow}
	var err error
	if r.Key, err = parseKey(fr.Key); err != nil {
		return Rule{}, err
	}
	if fr.MaxDelay != "" {
		if r.MaxDelay, err = time.ParseDuration(fr.MaxDelay); err != nil {
			return Rule{}, fmt.Errorf("max_delay: %w", err)
		}
		if r.MaxDelay <= 0 {
			return Rule{}, fmt.Errorf("max_delay %v: want a positive duration", r.MaxDelay)
		}
	}
	for i, fl := range fr.Limits {
		l, err := fl.limit()
		if err != nil {
			return Rule{}, fmt.Errorf("limit %d: %w", i+1, err)
		}
		r.Limits = append(r.Limits, l)
	}
	return r, nil
}

// algorithms maps the names of a rules file, and the Go names, to
// algorithms.
var algorithms = map[string]hybrid.Algorithm{
	"token-bucket":           hybrid.TokenBucket,
	"leaky-bucket":           hybrid.LeakyBucket,
	"fixed-window":           hybrid.FixedWindow,
	"sliding-window-log":     hybrid.SlidingWindowLog,
	"sliding-window-counter": hybrid.SlidingWindowCounter,
}

func (fl fileLimit) limit() (hybrid.Limit, error) {
	var l hybrid.Limit
	if fl.Algorithm != "" {
		a, ok := algorithms[fl.Algorithm]
		if !ok {
			for _, b := range algorithms {
				if b.String() == fl.Algorithm {
					a, ok = b, true
				}
			}
		}
		if !ok {
			return l, fmt.Errorf("unknown algorithm %q: want token-bucket, leaky-bucket, fixed-window, sliding-window-log or sliding-window-counter", fl.Algorithm)
		}
		l.Algorithm = a
	}
	if fl.Period == "" {
		return l, errors.New("period is required (a Go duration: 1s, 1m, 1h)")
	}
	p, err := time.ParseDuration(fl.Period)
	if err != nil {
		return l, fmt.Errorf("period: %w", err)
	}
	l.Rate, l.Period, l.Burst, l.Name = fl.Rate, p, fl.Burst, fl.Name
	return l, l.Validate()
}

// parseKey parses "ip" or ["api-key", "user", "ip"]; nil is the default.
func parseKey(v any) (KeySource, error) {
	var names []string
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		names = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return 0, fmt.Errorf("key: %v is not a name (api-key, user, ip)", e)
			}
			names = append(names, s)
		}
	default:
		return 0, fmt.Errorf("key: %v: want api-key, user, ip or a list of them", v)
	}
	if len(names) == 0 {
		return 0, errors.New("key: empty list (omit it for api-key, user and ip)")
	}
	var k KeySource
	for _, s := range names {
		found := false
		for _, n := range keyNames {
			if n.name == s {
				k |= n.k
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("key: unknown source %q: want api-key, user or ip", s)
		}
	}
	return k, nil
}
