package httplimit

import (
	"github.com/hybridlimit/hybridlimit/rules"
)

// MaxRulesFileSize bounds a rules file.
const MaxRulesFileSize = rules.MaxFileSize

// fileRule is a rule of the YAML form of a RuleSet: the shared fields and
// the route.
type fileRule struct {
	rules.FileRule `yaml:",inline"`
	Route          string `yaml:"route"`
}

func (f *fileRule) Common() *rules.FileRule { return &f.FileRule }
func (f *fileRule) Fill(r *rules.Rule)      { r.Pattern = f.Route }

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
