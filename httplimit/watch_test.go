package httplimit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridlimit/hybridlimit/hybrid"
)

const rulesV1 = `
rules:
  - {name: a, route: /a, limits: [{rate: 1, period: 1m}]}
  - {name: b, route: /b, limits: [{rate: 1, period: 1m}]}
`

// rulesV2 changes b and adds c; a is unchanged.
const rulesV2 = `
rules:
  - {name: a, route: /a, limits: [{rate: 1, period: 1m}]}
  - {name: b, route: /b, limits: [{rate: 5, period: 1m}]}
  - {name: c, route: /c, limits: [{rate: 1, period: 1m}]}
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
func startWatch(t *testing.T, mw *Middleware, path string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mw.Watch(ctx, path) }()
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

func ruleNames(mw *Middleware) string {
	var names []string
	for _, r := range mw.Stats().Rules {
		names = append(names, r.Name)
	}
	return strings.Join(names, ",")
}

func TestWatch(t *testing.T) {
	lim, _ := newMini(t)
	var log logBuffer
	mw := newMiddleware(t, lim, Config{Logger: log.logger()})
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rulesV1), 0o600); err != nil {
		t.Fatal(err)
	}
	startWatch(t, mw, path)
	waitFor(t, "the first load", func() bool { return ruleNames(mw) == "a,b" })
	h := mw.Wrap(ok)
	if w := do(h, "GET", "/a"); w.Code != 200 {
		t.Fatalf("GET /a = %d, want 200", w.Code)
	}
	if w := do(h, "GET", "/a"); w.Code != 429 {
		t.Fatalf("GET /a = %d, want 429", w.Code)
	}

	t.Run("valid file", func(t *testing.T) {
		writeAtomic(t, path, rulesV2)
		waitFor(t, "the reload", func() bool { return ruleNames(mw) == "a,b,c" })
		if st := mw.Stats(); st.Reloads != 2 || st.ReloadErrors != 0 {
			t.Errorf("Reloads, ReloadErrors = %d, %d; want 2, 0", st.Reloads, st.ReloadErrors)
		}
		// a is unchanged: same key, so its budget (spent) and counters stay.
		if w := do(h, "GET", "/a"); w.Code != 429 {
			t.Errorf("GET /a after reload = %d, want 429: an unchanged rule keeps its budget", w.Code)
		}
		if st := mw.Stats().Rules[0]; st.Name != "a" || st.Allowed != 1 || st.Denied != 2 {
			t.Errorf("Stats of a = %+v, want its counts kept", st)
		}
		if w := do(h, "GET", "/c"); w.Code != 200 {
			t.Errorf("GET /c = %d, want 200", w.Code)
		}
	})

	t.Run("invalid file", func(t *testing.T) {
		writeAtomic(t, path, "rules:\n  - {name: a, route: /a, limits: [{rate: 0, period: 1m}]}\n")
		waitFor(t, "the rejection", func() bool { return mw.Stats().ReloadErrors == 1 })
		if got := ruleNames(mw); got != "a,b,c" {
			t.Errorf("rules after a bad file = %s, want a,b,c kept", got)
		}
		if !strings.Contains(log.String(), "rules file rejected") || !strings.Contains(log.String(), "rate 0") {
			t.Errorf("log does not report the bad file:\n%s", log.String())
		}
		if w := do(h, "GET", "/c"); w.Code != 429 {
			t.Errorf("GET /c = %d, want 429 under the rules kept", w.Code)
		}
	})

	t.Run("removed file", func(t *testing.T) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the warning", func() bool { return strings.Contains(log.String(), "rules file missing") })
		if got := ruleNames(mw); got != "a,b,c" {
			t.Errorf("rules after removal = %s, want a,b,c kept", got)
		}
		if st := mw.Stats(); st.ReloadErrors != 1 || st.Reloads != 2 {
			t.Errorf("Reloads, ReloadErrors = %d, %d; want 2, 1: a missing file is no reload", st.Reloads, st.ReloadErrors)
		}
	})

	t.Run("file back", func(t *testing.T) {
		writeAtomic(t, path, rulesV1)
		waitFor(t, "the reload", func() bool { return ruleNames(mw) == "a,b" })
		if st := mw.Stats(); st.Reloads != 3 {
			t.Errorf("Reloads = %d, want 3", st.Reloads)
		}
	})
}

// TestWatchSymlinkSwap updates the file as a Kubernetes ConfigMap volume
// does: rules.yaml -> ..data/rules.yaml, and ..data is a symlink replaced
// by rename.
func TestWatchSymlinkSwap(t *testing.T) {
	lim, _ := newMini(t)
	mw := newMiddleware(t, lim, Config{})
	dir := t.TempDir()
	version := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "rules.yaml"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", rulesV1)
	if err := os.Symlink(filepath.Join("..data", "rules.yaml"), filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatal(err)
	}
	startWatch(t, mw, filepath.Join(dir, "rules.yaml"))
	waitFor(t, "the first load", func() bool { return ruleNames(mw) == "a,b" })
	version("..v2", rulesV2)
	waitFor(t, "the reload", func() bool { return ruleNames(mw) == "a,b,c" })
}

func TestWatchMissingDirectory(t *testing.T) {
	lim, _ := newMini(t)
	mw := newMiddleware(t, lim, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mw.Watch(ctx, filepath.Join(t.TempDir(), "nope", "rules.yaml")); err == nil {
		t.Fatal("Watch of a missing directory = nil, want an error")
	}
}

func TestSetRules(t *testing.T) {
	lim, _ := newMini(t)
	one := []hybrid.Limit{hybrid.PerMinute(1)}
	v1 := RuleSet{Rules: []Rule{{Name: "a", Route: "/a", Limits: one}}}
	mw := newMiddleware(t, lim, Config{Rules: v1})
	h := mw.Wrap(ok)
	do(h, "GET", "/a")
	if err := mw.SetRules(v1); err != nil {
		t.Fatal(err)
	}
	if st := mw.Stats(); st.Reloads != 0 {
		t.Errorf("Reloads = %d after an equal set, want 0", st.Reloads)
	}
	if err := mw.SetRules(RuleSet{Rules: []Rule{{Name: "a", Route: "/a"}}}); err == nil {
		t.Fatal("SetRules(no limits) = nil, want an error")
	}
	// Same name, another route: the budget follows the name.
	v2 := RuleSet{Rules: []Rule{{Name: "a", Route: "/z", Limits: one}}}
	if err := mw.SetRules(v2); err != nil {
		t.Fatal(err)
	}
	if w := do(h, "GET", "/z"); w.Code != 429 {
		t.Errorf("GET /z = %d, want 429: rule a keeps its key", w.Code)
	}
	st := mw.Stats()
	if st.Reloads != 1 || st.ReloadErrors != 1 || st.Rules[0].Allowed != 1 || st.Rules[0].Denied != 1 {
		t.Errorf("Stats = %+v, want 1 reload, 1 error, a's counts kept", st)
	}
	if got := mw.Rules(); !got.shared().Equal(v2.shared().Normalized()) {
		t.Errorf("Rules() = %+v, want %+v", got, v2)
	}
}

func TestWatchOversizedFile(t *testing.T) {
	lim, _ := newMini(t)
	var log logBuffer
	mw := newMiddleware(t, lim, Config{Logger: log.logger()})
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rulesV1), 0o600); err != nil {
		t.Fatal(err)
	}
	startWatch(t, mw, path)
	waitFor(t, "the first load", func() bool { return ruleNames(mw) == "a,b" })
	writeAtomic(t, path, rulesV2+"#"+strings.Repeat("x", MaxRulesFileSize))
	waitFor(t, "the rejection", func() bool { return mw.Stats().ReloadErrors == 1 })
	if got := ruleNames(mw); got != "a,b" {
		t.Errorf("rules after an oversized file = %s, want a,b kept", got)
	}
	if !strings.Contains(log.String(), "larger than") {
		t.Errorf("log does not say why:\n%s", log.String())
	}
}

// TestReloadKeepsBudgets: a reload that lowers a rule's limit does not
// reset its clients (the rule's limits are named after it), while a limit
// added to the rule starts full.
func TestReloadKeepsBudgets(t *testing.T) {
	lim, _ := newMini(t)
	rules := func(limits ...hybrid.Limit) RuleSet {
		return RuleSet{Rules: []Rule{{Name: "api", Route: "/a", Limits: limits}}, Default: &Rule{Limits: limits}}
	}
	mw := newMiddleware(t, lim, Config{Rules: rules(hybrid.PerHour(10))})
	h := mw.Wrap(ok)
	for _, path := range []string{"/a", "/b"} {
		for i := range 8 {
			if w := do(h, "GET", path); w.Code != 200 {
				t.Fatalf("GET %s #%d = %d, want 200", path, i+1, w.Code)
			}
		}
	}
	if err := mw.SetRules(rules(hybrid.PerHour(5))); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/a", "/b"} {
		if w := do(h, "GET", path); w.Code != 429 {
			t.Errorf("GET %s after lowering 10/h to 5/h with 8 used = %d, want 429", path, w.Code)
		}
	}
	if err := mw.SetRules(rules(hybrid.PerHour(12))); err != nil {
		t.Fatal(err)
	}
	// 5 in use (the lowered limit held at most 5) of 12: 7 more.
	for _, path := range []string{"/a", "/b"} {
		n := 0
		for range 10 {
			if do(h, "GET", path).Code == 200 {
				n++
			}
		}
		if n != 7 {
			t.Errorf("GET %s under 12/h with 5 in use: %d admitted, want 7", path, n)
		}
	}
	if got := mw.Rules(); got.Rules[0].Limits[0].Name != "api#0" || got.Default.Limits[0].Name != "default#0" {
		t.Errorf("limits named %q and %q, want api#0 and default#0", got.Rules[0].Limits[0].Name, got.Default.Limits[0].Name)
	}
}
