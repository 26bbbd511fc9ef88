package grpclimit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

const rulesV1 = `
rules:
  - {name: check, method: /grpc.health.v1.Health/Check, limits: [{rate: 1, period: 1m}]}
  - {name: echo, method: /test.Echo/*, limits: [{rate: 1, period: 1m}]}
`

// rulesV2 changes echo and adds watch; check is unchanged.
const rulesV2 = `
rules:
  - {name: check, method: /grpc.health.v1.Health/Check, limits: [{rate: 1, period: 1m}]}
  - {name: echo, method: /test.Echo/*, limits: [{rate: 5, period: 1m}]}
  - {name: watch, method: /grpc.health.v1.Health/Watch, limits: [{rate: 1, period: 1m}]}
`

// writeAtomic replaces path as editors do: a new file renamed over it.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startWatch runs Watch until the test ends and checks that it returns nil.
func startWatch(t *testing.T, ic *Interceptor, path string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ic.Watch(ctx, path) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch = %v, want nil when its context ends", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Watch did not return after its context ended")
		}
	})
}

func ruleNames(ic *Interceptor) string {
	var names []string
	for _, r := range ic.Stats().Rules {
		names = append(names, r.Name)
	}
	return strings.Join(names, ",")
}

// TestWatch reloads a rules file on a running server: a valid file is put
// in force (rules that keep their name keep their budgets and counters),
// an invalid one is logged and counted and the old rules stay, as they do
// while the file is missing.
func TestWatch(t *testing.T) {
	var log logBuffer
	ic := newInterceptor(t, newLimiter(t), Config{Logger: log.logger()})
	client := healthpb.NewHealthClient(dial(t, serve(t, ic).addr))
	ctx := ctxT(t)
	check := func() codes.Code {
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return status.Code(err)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rulesV1), 0o600); err != nil {
		t.Fatal(err)
	}
	startWatch(t, ic, path)
	waitFor(t, "the first load", func() bool { return ruleNames(ic) == "check,echo" })
	if c := check(); c != codes.OK {
		t.Fatalf("Check = %v, want OK", c)
	}
	if c := check(); c != codes.ResourceExhausted {
		t.Fatalf("Check = %v, want ResourceExhausted", c)
	}

	t.Run("valid file", func(t *testing.T) {
		writeAtomic(t, path, rulesV2)
		waitFor(t, "the reload", func() bool { return ruleNames(ic) == "check,echo,watch" })
		if st := ic.Stats(); st.Reloads != 2 || st.ReloadErrors != 0 {
			t.Errorf("Reloads, ReloadErrors = %d, %d; want 2, 0", st.Reloads, st.ReloadErrors)
		}
		if c := check(); c != codes.ResourceExhausted {
			t.Errorf("Check after reload = %v, want ResourceExhausted: an unchanged rule keeps its budget", c)
		}
		if st := ic.Stats().Rules[0]; st.Allowed != 1 || st.Denied != 2 {
			t.Errorf("Stats of check = %+v, want its counts kept", st)
		}
		if got := ic.Rules().Rules[1].Limits[0]; got.Rate != 5 || got.Name != "echo#0" {
			t.Errorf("Rules()[1].Limits[0] = %v, want 5/min named echo#0", got)
		}
	})

	t.Run("invalid file", func(t *testing.T) {
		writeAtomic(t, path, "rules:\n  - {name: check, method: /grpc.health.v1.Health/Check, limits: [{rate: 0, period: 1m}]}\n")
		waitFor(t, "the rejection", func() bool { return ic.Stats().ReloadErrors == 1 })
		if got := ruleNames(ic); got != "check,echo,watch" {
			t.Errorf("rules after a bad file = %s, want them kept", got)
		}
		if !strings.Contains(log.String(), "grpclimit: rules file rejected") || !strings.Contains(log.String(), "rate 0") {
			t.Errorf("log does not report the bad file:\n%s", log.String())
		}
	})

	t.Run("httplimit's file", func(t *testing.T) {
		writeAtomic(t, path, "rules:\n  - {name: check, route: /check, limits: [{rate: 9, period: 1m}]}\n")
		waitFor(t, "the rejection", func() bool { return ic.Stats().ReloadErrors == 2 })
		if !strings.Contains(log.String(), `unknown field \"route\"`) {
			t.Errorf("log does not name the route field:\n%s", log.String())
		}
	})

	t.Run("removed file", func(t *testing.T) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the warning", func() bool { return strings.Contains(log.String(), "rules file missing") })
		if got := ruleNames(ic); got != "check,echo,watch" {
			t.Errorf("rules after removal = %s, want them kept", got)
		}
	})

	t.Run("file back", func(t *testing.T) {
		writeAtomic(t, path, rulesV1)
		waitFor(t, "the reload", func() bool { return ruleNames(ic) == "check,echo" })
		if st := ic.Stats(); st.Reloads != 3 || st.ReloadErrors != 2 {
			t.Errorf("Reloads, ReloadErrors = %d, %d; want 3, 2", st.Reloads, st.ReloadErrors)
		}
	})
}

func TestWatchMissingDirectory(t *testing.T) {
	ic := newInterceptor(t, newLimiter(t), Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ic.Watch(ctx, filepath.Join(t.TempDir(), "nope", "rules.yaml")); err == nil {
		t.Fatal("Watch of a missing directory = nil, want an error")
	}
}

func TestSetRules(t *testing.T) {
	one := []hybrid.Limit{hybrid.PerMinute(1)}
	v1 := RuleSet{Rules: []Rule{{Name: "a", Method: mCheck, Limits: one}}}
	ic := newInterceptor(t, newLimiter(t), Config{Rules: v1})
	client := healthpb.NewHealthClient(dial(t, serve(t, ic).addr))
	ctx := ctxT(t)
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := ic.SetRules(v1); err != nil {
		t.Fatal(err)
	}
	if st := ic.Stats(); st.Reloads != 0 {
		t.Errorf("Reloads = %d after an equal set, want 0", st.Reloads)
	}
	if err := ic.SetRules(RuleSet{Rules: []Rule{{Name: "a", Method: "nope"}}}); err == nil {
		t.Fatal("SetRules(bad method) = nil, want an error")
	}
	// Same name, the whole service: the budget follows the name.
	v2 := RuleSet{Rules: []Rule{{Name: "a", Method: "/grpc.health.v1.Health/*", Limits: one}}}
	if err := ic.SetRules(v2); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("Check = %v, want ResourceExhausted: rule a keeps its key", err)
	}
	st := ic.Stats()
	if st.Reloads != 1 || st.ReloadErrors != 1 || st.Rules[0].Allowed != 1 || st.Rules[0].Denied != 1 {
		t.Errorf("Stats = %+v, want 1 reload, 1 error, a's counts kept", st)
	}
	if got := ic.Rules(); !got.shared().Equal(v2.shared().Normalized()) {
		t.Errorf("Rules() = %+v, want %+v", got, v2)
	}
}
