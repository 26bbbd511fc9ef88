package installtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/hybridlimit/hybridlimit/internal/testkit/redistest"
)

// version is the pretend release: a prerelease no real release will take.
const version = "v0.0.1-installtest"

// modules a user installs: the path of each, and the consumer program
// that uses it (testdata/consumer/NAME).
var installs = []struct{ path, program string }{
	{"github.com/hybridlimit/hybridlimit", "limit"},
	{"github.com/hybridlimit/hybridlimit/httplimit", "http"},
	{"github.com/hybridlimit/hybridlimit/grpclimit", "grpc"},
	{"github.com/hybridlimit/hybridlimit/promlimit", "metrics"},
}

// maxGraph is the most modules a module that imports only hybrid may list
// in go list -m all: itself, the library, the four dependencies DESIGN.md
// chose with what they require, and the library's test dependencies.
const maxGraph = 22

// middlewareOnly start the paths of modules that only the middlewares,
// the rules they share and promlimit need: a module that imports only
// hybrid lists none of them.
var middlewareOnly = []string{
	"github.com/hybridlimit/hybridlimit/",
	"google.golang.org/grpc",
	"github.com/prometheus/",
	"github.com/fsnotify/",
	"github.com/goccy/go-yaml",
}

// linked are the modules a program that imports only hybrid may link: it,
// the library, and the six the library needs.
var linked = []string{
	"example.com/alone",
	"github.com/hybridlimit/hybridlimit",
	"github.com/redis/go-redis/v9",
	"github.com/buraksezer/consistent",
	"github.com/cespare/xxhash/v2",
	"github.com/sony/gobreaker/v2",
	"go.uber.org/atomic",
	"golang.org/x/sys",
}

func TestInstallAsUser(t *testing.T) {
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	cloneTree(t, root, repo)
	run(t, repo, nil, "./scripts/release", version)

	proxy := filepath.Join(tmp, "proxy")
	for _, m := range strings.Fields(run(t, repo, nil, "go", "list", "-m", "-f", "{{.Dir}}")) {
		serve(t, proxy, m)
	}

	// A fresh module outside the workspace, its own module cache; the
	// modules that are not ours come from this machine's module cache,
	// and from the public proxy where that lacks one.
	cache := filepath.Join(tmp, "modcache")
	t.Cleanup(func() {
		// The module cache is read-only: go clean removes it.
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+cache)
		cmd.Run()
	})
	shared := strings.TrimSpace(run(t, root, nil, "go", "env", "GOMODCACHE"))
	env := []string{
		"GOWORK=off",
		"GOFLAGS=-mod=mod",
		"GOSUMDB=off",
		"GOMODCACHE=" + cache,
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(shared, "cache", "download")) + ",https://proxy.golang.org",
	}
	user := filepath.Join(tmp, "consumer")
	copyDir(t, "testdata/consumer", user)
	if err := os.WriteFile(filepath.Join(user, "go.mod"), []byte("module example.com/consumer\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range installs {
		run(t, user, env, "go", "get", in.path+"@"+version)
	}
	bin := filepath.Join(tmp, "bin")
	run(t, user, env, "go", "build", "-o", bin+string(filepath.Separator), "./...")

	srv := redistest.Start(t)
	for _, in := range installs {
		t.Logf("%s", strings.TrimSpace(run(t, user, nil, filepath.Join(bin, in.program), srv.Addr())))
	}

	// A service that imports only hybrid: what its module graph lists, and
	// what it links (DESIGN-NOTES, "A workspace of modules").
	alone := filepath.Join(tmp, "hybrid-only")
	copyDir(t, "testdata/consumer/limit", alone)
	if err := os.WriteFile(filepath.Join(alone, "go.mod"), []byte("module example.com/alone\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, alone, env, "go", "get", installs[0].path+"@"+version)
	run(t, alone, env, "go", "mod", "tidy") // as a user commits it
	graph := strings.Fields(run(t, alone, env, "go", "list", "-m", "-f", "{{.Path}}", "all"))
	if len(graph) > maxGraph {
		t.Errorf("a module that imports only hybrid lists %d modules, want at most %d: %v", len(graph), maxGraph, graph)
	}
	for _, m := range graph {
		for _, heavy := range middlewareOnly {
			if strings.HasPrefix(m, heavy) {
				t.Errorf("a module that imports only hybrid lists %s, which only the middlewares and promlimit need", m)
			}
		}
	}
	for _, m := range strings.Fields(run(t, alone, env, "go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")) {
		if !slices.Contains(linked, m) {
			t.Errorf("a program that imports only hybrid links %s", m)
		}
	}
	t.Logf("a module that imports only hybrid: %d modules in its graph", len(graph))

	// The main job without a clone.
	run(t, user, append(env, "GOBIN="+bin), "go", "install", "github.com/hybridlimit/hybridlimit/bench@"+version)
	if out, err := exec.Command(filepath.Join(bin, "bench"), "-h").CombinedOutput(); !strings.Contains(string(out), "-workload") {
		t.Errorf("bench -h: %v\n%s", err, out)
	}
}

// cloneTree makes dst a git repository of root's working tree as it is:
// its tracked files and the untracked ones git does not ignore, committed.
func cloneTree(t *testing.T, root, dst string) {
	t.Helper()
	files := run(t, root, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, f := range strings.Split(strings.TrimRight(files, "\x00"), "\x00") {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil {
			continue // deleted in the working tree, not yet in the index
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git := []string{"-c", "user.name=installtest", "-c", "user.email=installtest@example.invalid", "-c", "commit.gpgsign=false"}
	run(t, dst, nil, "git", "init", "-q")
	run(t, dst, nil, "git", "add", "-A")
	run(t, dst, nil, "git", append(git, "commit", "-q", "-m", "the working tree")...)
	// scripts/release commits too.
	run(t, dst, nil, "git", "config", "user.name", "installtest")
	run(t, dst, nil, "git", "config", "user.email", "installtest@example.invalid")
}

// serve adds the module in dir, at version, to the module proxy on disk at
// proxy (the layout GOPROXY=file:// reads: list, .info, .mod, .zip).
func serve(t *testing.T, proxy, dir string) {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(gomod), "\n", 2)[0], "module"))
	esc, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("list", []byte(version+"\n"))
	write(version+".info", fmt.Appendf(nil, `{"Version":%q,"Time":"2026-12-07T00:00:00Z"}`, version))
	write(version+".mod", gomod)
	f, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The zip holds the module's directory but its nested modules, as the
	// go command's own would.
	if err := modzip.CreateFromDir(f, module.Version{Path: path, Version: version}, dir); err != nil {
		t.Fatalf("zip of %s: %v", path, err)
	}
}

// copyDir copies the files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs name with args in dir, with env added to this process's, and
// returns its standard output; it fails t, with what the command wrote to
// both, if the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}
