package grpclimit

import (
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/internal/ruleset"
)

// The header metadata keys of a decided call, with the values of
// httplimit's RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers).
const (
	// PolicyMetadata lists every limit of the rule:
	// `"search";q=5;w=60`, `"s-0";q=10;w=1, "s-1";q=1000;w=3600`.
	PolicyMetadata = "ratelimit-policy"
	// RateLimitMetadata describes the binding limit: `"search";r=4;t=12`,
	// r its remaining units (0 when denied), t the seconds within which no
	// more than r may be used, or when denied the seconds to wait.
	RateLimitMetadata = "ratelimit"
)

// header returns the rate-limit metadata of a decided call, nil when
// Config.NoHeaders. When the Limiter answered without a decision
// (FailOpen) only the policy is sent.
func (i *Interceptor) header(rl *rule, o ruleset.Outcome) metadata.MD {
	if i.cfg.NoHeaders {
		return nil
	}
	md := metadata.MD{PolicyMetadata: {rl.Policy}}
	if v, ok := rl.RateLimit(o.Result, o.Decision); ok {
		md[RateLimitMetadata] = []string{v}
	}
	return md
}

// denial returns the status of a refused call: ResourceExhausted, the
// sentence httplimit's 429 body has as its message, and two details:
//
//   - google.rpc.RetryInfo: the time until the call would pass, in whole
//     seconds rounded up and never 0 (httplimit's Retry-After);
//   - google.rpc.QuotaFailure: one violation whose subject is what the
//     call was keyed by ("ip:203.0.113.7", "user:alice", "key:<hash>",
//     "all"), its quota_id the binding limit's policy name ("search",
//     "search-1"; httplimit's violated-policies) and its quota_value that
//     limit's rate.
func denial(rl *rule, key string, res hybrid.Result, d ruleset.Decision) error {
	st := status.New(codes.ResourceExhausted, rl.Detail(d))
	b := rl.Binding(res)
	withDetails, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(d.RetrySeconds()) * time.Second)},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     strings.TrimPrefix(key, rl.KeyPrefix),
			Description: rl.Detail(d),
			QuotaId:     rl.Names[b],
			QuotaValue:  rl.Limits[b].Rate,
		}}},
	)
	if err != nil {
		return st.Err() // unreachable: the details are well-formed messages
	}
	return withDetails.Err()
}
