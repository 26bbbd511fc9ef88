package rules

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

// MaxFileSize bounds a rules file.
const MaxFileSize = 1 << 20

// File is the YAML form of a RuleSet, R being a middleware's rule entry:
// FileRule inlined beside its own pattern field.
type File[R any] struct {
	Rules   []R `yaml:"rules"`   // RuleSet.Rules
	Default *R  `yaml:"default"` // RuleSet.Default
}

// FileRule holds the fields of a rules file's entry that both middlewares
// share. A middleware's entry type inlines it:
//
//	type fileRule struct {
//		rules.FileRule `yaml:",inline"`
//		Route            string `yaml:"route"`
//	}
type FileRule struct {
	Name     string      `yaml:"name"`      // Rule.Name
	Tier     string      `yaml:"tier"`      // Rule.Tier
	Key      any         `yaml:"key"`       // Rule.Key: a source or a list of them
	Limits   []FileLimit `yaml:"limits"`    // Rule.Limits
	MaxDelay string      `yaml:"max_delay"` // Rule.MaxDelay, a Go duration
	Shadow   bool        `yaml:"shadow"`    // Rule.Shadow
}

// FileLimit is the YAML form of a limit.
type FileLimit struct {
	Name      string `yaml:"name"`      // hybrid.Limit.Name
	Algorithm string `yaml:"algorithm"` // "token-bucket" (the default), "leaky-bucket", ... or the Go name
	Rate      int64  `yaml:"rate"`      // hybrid.Limit.Rate
	Period    string `yaml:"period"`    // hybrid.Limit.Period, a Go duration
	Burst     int64  `yaml:"burst"`     // hybrid.Limit.Burst
}

// Entry is a middleware's rule entry in a rules file.
type Entry interface {
	// Common returns the shared fields.
	Common() *FileRule
	// Fill sets the middleware's own fields of r (Pattern, PerMessage).
	Fill(r *Rule)
}

// Parse parses and validates a rules file whose entries are of type R.
// Unknown fields, duplicate keys and a file without any rule are errors (an
// empty file is more often a truncated write than an intent). Errors wrap
// the dialect's ErrInvalid and name the line or the rule.
func Parse[R any, PR interface {
	*R
	Entry
}, M any](d *Dialect[M], data []byte) (RuleSet, error) {
	var f File[R]
	if err := decode(d, data, &f); err != nil {
		return RuleSet{}, err
	}
	if len(f.Rules) == 0 && f.Default == nil {
		return RuleSet{}, d.Invalid("no rules and no default")
	}
	var rs RuleSet
	for i := range f.Rules {
		e := PR(&f.Rules[i])
		r, err := rule(e)
		if err != nil {
			return RuleSet{}, d.Invalid("rule %d (%q): %w", i+1, e.Common().Name, err)
		}
		rs.Rules = append(rs.Rules, r)
	}
	if f.Default != nil {
		r, err := rule(PR(f.Default))
		if err != nil {
			return RuleSet{}, d.Invalid("default rule: %w", err)
		}
		rs.Default = &r
	}
	if _, _, err := d.Compile(rs, "", nil); err != nil {
		return RuleSet{}, err
	}
	return rs, nil
}

// Load reads a rules file of at most MaxFileSize bytes (readFile) and
// parses it (Parse).
func Load[R any, PR interface {
	*R
	Entry
}, M any](d *Dialect[M], path string) (RuleSet, error) {
	data, err := readFile(d, path)
	if err != nil {
		return RuleSet{}, err
	}
	return Parse[R, PR](d, data)
}

// decode unmarshals a rules file strictly. The YAML parser is not ours: a
// panic in it is an invalid file, never a crashed server.
func decode[M any](d *Dialect[M], data []byte, f any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = d.Invalid("parsing YAML: %v", p)
		}
	}()
	if err := yaml.UnmarshalWithOptions(data, f, yaml.DisallowUnknownField()); err != nil {
		return d.Invalid("%s", strings.TrimSpace(yaml.FormatError(err, false, false)))
	}
	return nil
}

// readFile reads a rules file of at most MaxFileSize bytes.
func readFile[M any](d *Dialect[M], path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, d.Invalid("%s is larger than %d bytes", path, MaxFileSize)
	}
	return data, nil
}

func rule(e Entry) (Rule, error) {
	fr := e.Common()
	r := Rule{Name: fr.Name, Tier: fr.Tier, Shadow: fr.Shadow}
	e.Fill(&r)
	var err error
	if r.Key, err = parseKeyField(fr.Key); err != nil {
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

func (fl FileLimit) limit() (hybrid.Limit, error) {
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
