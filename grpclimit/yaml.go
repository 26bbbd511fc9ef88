package grpclimit

import (
	"github.com/hybridlimit/hybridlimit/rules"
)

// MaxRulesFileSize bounds a rules file.
const MaxRulesFileSize = rules.MaxFileSize

// fileRule is a rule of the YAML form of a RuleSet: the fields httplimit's
// rules file has, with method where it has route, and per_message.
type fileRule struct {
	rules.FileRule `yaml:",inline"`
	Method         string `yaml:"method"`
	PerMessage     bool   `yaml:"per_message"`
}

func (f *fileRule) Common() *rules.FileRule { return &f.FileRule }
func (f *fileRule) Fill(r *rules.Rule)      { r.Pattern, r.PerMessage = f.Method, f.PerMessage }

// ParseRules parses and validates a rules file, the format of httplimit's
// with method: where it has route: (and per_message:):
//
//	rules:
//	  - name: search                    # required, unique: [A-Za-z0-9._-]{1,64}
//	    method: /shop.Catalog/Search    # a full method, or /shop.Catalog/* for
//	                                    # the service; omit for every method
//	    tier: ""                        # omit for every tier
//	    key: [api-key, user, ip]        # default all three
//	    limits:                         # 1 to 16, charged together
//	      - rate: 5                     # units per period, required
//	        period: 1m                  # Go duration, required
//	        algorithm: token-bucket     # default; leaky-bucket, fixed-window,
//	                                    # sliding-window-log, sliding-window-counter
//	        burst: 5                    # buckets only; default rate
//	        name: per-minute            # keys the budget; default <rule>#<index>
//	    max_delay: 1s                   # LeakyBucket only; default 1s
//	    per_message: false              # streams: charge each message too
//	    shadow: false                   # dry run
//	default:                            # optional; name defaults to "default"
//	  limits: [{rate: 600, period: 1m}]
//
// Unknown fields (route: among them), duplicate keys and a file without
// any rule are errors. Errors wrap ErrInvalidRules and name the line or
// the rule.
func ParseRules(data []byte) (RuleSet, error) { return fromFile(parse(data)) }

func parse(data []byte) (rules.RuleSet, error) { return rules.Parse[fileRule](dialect, data) }

// LoadRules reads and parses a rules file (see ParseRules) of at most
// MaxRulesFileSize bytes.
func LoadRules(path string) (RuleSet, error) { return fromFile(rules.Load[fileRule](dialect, path)) }

// fromFile converts the rules of a parsed file, or passes its error on.
func fromFile(rs rules.RuleSet, err error) (RuleSet, error) {
	if err != nil {
		return RuleSet{}, err
	}
	return ruleSetOf(rs), nil
}
