package grpclimit

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hybridlimit/hybridlimit/hybrid"
	"github.com/hybridlimit/hybridlimit/rules"
)

// retryOf returns the retry a denial advises, in milliseconds, after
// checking that its three forms agree: RetryInfo (whole milliseconds), the
// message and QuotaFailure description (`...; retry in 2ms.`) and, from a
// server (trailer not nil), the PushbackTrailer.
func retryOf(t *testing.T, err error, trailer metadata.MD) int64 {
	t.Helper()
	ri, qf := details(t, err)
	d := ri.GetRetryDelay().AsDuration()
	ms := int64(d / time.Millisecond)
	if d <= 0 || d%time.Millisecond != 0 {
		t.Errorf("RetryInfo delay = %v, want whole milliseconds above 0", d)
	}
	msg := status.Convert(err).Message()
	if want := `"; retry in ` + rules.FormatMillis(ms) + "."; len(msg) < len(want) || msg[len(msg)-len(want):] != want {
		t.Errorf("message = %q, want it to end with %q (RetryInfo %v)", msg, want, d)
	}
	if desc := qf.GetViolations()[0].GetDescription(); desc != msg {
		t.Errorf("QuotaFailure description = %q, want the message %q", desc, msg)
	}
	if trailer != nil {
		if got, want := trailer.Get(PushbackTrailer), []string{strconv.FormatInt(ms, 10)}; len(got) != 1 || got[0] != want[0] {
			t.Errorf("trailer %s = %q, want %q (RetryInfo %v)", PushbackTrailer, got, want, d)
		}
	}
	return ms
}

// TestRetryAtRetryDelayPasses: on a fast limit, 1000/s (a token every
// millisecond), a denial advises the time until the call would pass to the
// millisecond, not HTTP's whole second, in RetryInfo, the message and the
// pushback trailer alike; a call retried exactly that much later passes.
func TestRetryAtRetryDelayPasses(t *testing.T) {
	fast := hybrid.Limit{Rate: 1000, Period: time.Second, Burst: 1}
	ic := newInterceptor(t, newLimiter(t), Config{Rules: RuleSet{Rules: []Rule{{Name: "fast", Method: mSay, Limits: []hybrid.Limit{fast}}}}})
	conn := dial(t, serve(t, ic).addr)
	ctx := ctxT(t)
	seen := map[int64]int{}
	for round := range 20 {
		// Call until denied: on a busy machine a round trip may take
		// longer than the millisecond a token takes.
		var err error
		var trailer metadata.MD
		for range 1000 {
			trailer = nil
			if err = say(ctx, conn, grpc.Trailer(&trailer)); err != nil {
				break
			}
		}
		ms := retryOf(t, err, trailer)
		if ms > 1 {
			t.Fatalf("round %d: retry in %dms, want at most 1ms, the time between tokens", round, ms)
		}
		seen[ms]++
		time.Sleep(time.Duration(ms) * time.Millisecond)
		trailer = nil
		if err := say(ctx, conn, grpc.Trailer(&trailer)); err != nil {
			t.Fatalf("round %d: retried after the advised %dms: %v, want OK", round, ms, err)
		}
		if v := trailer.Get(PushbackTrailer); len(v) != 0 {
			t.Errorf("round %d: OK call with trailer %s %q", round, PushbackTrailer, v)
		}
	}
	t.Logf("retry delays advised: %v (ms: rounds)", seen)
}

// TestRetryPolicyHonoursPushback: a grpc-go client whose service config
// retries RESOURCE_EXHAUSTED waits the pushback trailer's delay, not its
// backoff, and its retry passes. It only retries a trailers-only response
// (gRFC A6: a call is committed once header metadata arrives), so a
// server that sends the ratelimit header metadata (the default) is not
// retried, and one with Config.NoHeaders is.
func TestRetryPolicyHonoursPushback(t *testing.T) {
	// A backoff of 10 ms, far shorter than the 500 ms between tokens: a
	// retry that ignored the pushback would be denied again.
	const serviceConfig = `{"methodConfig": [{
		"name": [{"service": "test.Echo", "method": "Say"}],
		"retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`
	slow := hybrid.Limit{Rate: 2, Period: time.Second, Burst: 1} // a token every 500 ms
	lim := newLimiter(t)
	tests := []struct {
		name      string
		noHeaders bool
		want      codes.Code // of the second call
	}{
		{"header metadata: not retried", false, codes.ResourceExhausted},
		{"no headers: retried after the pushback", true, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ic := newInterceptor(t, lim, Config{NoHeaders: tt.noHeaders, Prefix: "grpc-" + strconv.FormatBool(tt.noHeaders) + ":",
				Rules: RuleSet{Rules: []Rule{{Name: "slow", Method: mSay, Limits: []hybrid.Limit{slow}}}}})
			conn := dial(t, serve(t, ic).addr, grpc.WithDefaultServiceConfig(serviceConfig))
			ctx := ctxT(t)
			if err := say(ctx, conn); err != nil {
				t.Fatalf("first call: %v", err)
			}
			start := time.Now()
			var header, trailer metadata.MD
			err := say(ctx, conn, grpc.Header(&header), grpc.Trailer(&trailer))
			took := time.Since(start)
			if status.Code(err) != tt.want {
				t.Fatalf("second call = %v, want %v", err, tt.want)
			}
			st := ic.Stats().Rules[0]
			switch tt.want {
			case codes.OK:
				// Retried once, after the pushback: about 500 ms.
				if st.Allowed != 2 || st.Denied != 1 {
					t.Errorf("Stats = %+v, want 2 allowed, 1 denied: one retry", st)
				}
				if took < 300*time.Millisecond {
					t.Errorf("second call took %v, want the pushback of about 500ms waited", took)
				}
			default:
				// Not retried: one attempt, refused at once.
				if st.Allowed != 1 || st.Denied != 1 {
					t.Errorf("Stats = %+v, want 1 allowed, 1 denied: no retry", st)
				}
				if ms := retryOf(t, err, trailer); ms < 300 || ms > 500 {
					t.Errorf("pushback %dms, want about 500ms", ms)
				}
				if len(header.Get(RateLimitMetadata)) != 1 {
					t.Errorf("header = %v, want the ratelimit metadata that commits the call", header)
				}
			}
		})
	}
}

// TestClientWaitsTheExactDelay: grpclimit's client interceptor waits out a
// denial for the Limiter's RetryAfter, not a rounded second: 20 calls at
// once under 1000/s (burst 1) all pass within a fraction of a second.
func TestClientWaitsTheExactDelay(t *testing.T) {
	srv := serve(t, nil)
	out := newInterceptor(t, newLimiter(t), Config{Rules: RuleSet{Rules: []Rule{
		{Name: "fast", Method: mSay, Limits: []hybrid.Limit{{Rate: 1000, Period: time.Second, Burst: 1}}},
	}}})
	conn := clientConn(t, srv, out)
	ctx := ctxT(t)
	start := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := say(ctx, conn); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("20 calls at 1000/s took %v, want about 20ms: a wait of a rounded second is too long", took)
	}
	if st := out.Stats().Rules[0]; st.Allowed+st.Delayed != 20 || st.Delayed == 0 {
		t.Errorf("Stats = %+v, want 20 passed, some after a wait", st)
	}
}
