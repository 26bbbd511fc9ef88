package grpclimit

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
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
	// more than r may be used, or when denied the seconds to wait, whole
	// seconds rounded up as the draft has them (RetryInfo and
	// PushbackTrailer say it to the millisecond).
	RateLimitMetadata = "ratelimit"
)

// header returns the rate-limit metadata of a decided call, nil when
// Config.NoHeaders. When the Limiter answered without a decision
// (FailOpen) only the policy is sent.
func (i *Interceptor) header(rl *rule, o rules.Outcome) metadata.MD {
	if i.cfg.NoHeaders {
		return nil
	}
	md := metadata.MD{PolicyMetadata: {rl.Policy}}
	if v, ok := rl.RateLimit(o.Result, o.Decision); ok {
		md[RateLimitMetadata] = []string{v}
	}
	return md
}

// PushbackTrailer is the trailer metadata key of gRFC A6's server
// pushback, which a denied call carries: the milliseconds until the call
// would pass, as an integer ("1", "500", "1800000"), RetryInfo's delay. A
// grpc-go client whose service config has a retry policy for
// RESOURCE_EXHAUSTED waits that long before its next attempt instead of its
// backoff; it retries only a response without header metadata, so only
// with Config.NoHeaders (see the package doc, "Answers").
const PushbackTrailer = "grpc-retry-pushback-ms"

// pushback returns the trailer metadata of a denial: PushbackTrailer with
// d's retry in milliseconds.
func pushback(d rules.Decision) metadata.MD {
	return metadata.MD{PushbackTrailer: {strconv.FormatInt(d.RetryMillis(), 10)}}
}

// denial returns the status of a refused call: ResourceExhausted, a
// sentence as its message (`Too many requests under rule "search"; retry
// in 2ms.`), and two details:
//
//   - google.rpc.RetryInfo: the time until the call would pass, rounded up
//     to the millisecond and never 0, the value of PushbackTrailer;
//   - google.rpc.QuotaFailure: one violation whose subject is what the
//     call was keyed by ("ip:203.0.113.7", "user:alice", "key:<hash>",
//     "all"), its quota_id the binding limit's policy name ("search",
//     "search-1"; httplimit's violated-policies), its quota_value that
//     limit's rate and its description the message.
func denial(rl *rule, key string, res hybrid.Result, d rules.Decision) error {
	detail := rl.DetailMillis(d)
	st := status.New(codes.ResourceExhausted, detail)
	b := rl.Binding(res)
	withDetails, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(d.RetryMillis()) * time.Millisecond)},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     strings.TrimPrefix(key, rl.KeyPrefix),
			Description: detail,
			QuotaId:     rl.Names[b],
			QuotaValue:  rl.Limits[b].Rate,
		}}},
	)
	if err != nil {
		return st.Err() // unreachable: the details are well-formed messages
	}
	return withDetails.Err()
}
