// Package rules is the vocabulary httplimit and grpclimit share: what a
// rule keys its clients by (KeySource) and what a rule set reports
// (Stats). Both middlewares name these types as their own
// (httplimit.KeySource, grpclimit.Stats, …): they are these, so a key
// source or a snapshot means the same in both, and promlimit reads either
// middleware's Stats without importing it.
//
// It imports nothing of the module and nothing outside the standard
// library.
package rules
