package doccheck

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// libraryRequires are the modules the library's go.mod may require: what
// limit, local, remote, shard, breaker and hybrid need, what their
// tests need, and what those require in turn. A service that imports
// hybrid reads every one of them (a pruned module graph still holds our
// go.mod's requirements, tests' included), so anything else belongs in a
// nested module (DESIGN-NOTES, "A workspace of modules").
var libraryRequires = []string{
	// the library
	"github.com/redis/go-redis/v9",
	"github.com/buraksezer/consistent",
	"github.com/cespare/xxhash/v2",
	"github.com/sony/gobreaker/v2",
	"go.uber.org/atomic", // go-redis's
	"golang.org/x/sys",   // go-redis's
	// its tests: a Redis in process, goroutine checks, two oracles
	"github.com/alicebob/miniredis/v2",
	"github.com/yuin/gopher-lua", // miniredis's
	"go.uber.org/goleak",
	"github.com/go-redis/redis_rate/v10",
	"golang.org/x/time",
}

// directives returns the first argument of each verb directive of a go.mod
// or go.work file, on a line of its own ("require x v1") or in a block
// ("require (" … ")").
func directives(t *testing.T, path, verb string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	block := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == verb && len(f) > 1 && f[1] == "(":
			block = true
		case block && f[0] == ")":
			block = false
		case block:
			out = append(out, f[0])
		case f[0] == verb && len(f) > 1:
			out = append(out, f[1])
		}
	}
	return out
}

// TestLibraryRequirements: the library's go.mod requires nothing beyond
// libraryRequires: no middleware's, bench's or test harness's dependency
// reaches the module graph of a service that imports only hybrid.
func TestLibraryRequirements(t *testing.T) {
	got := directives(t, filepath.Join(moduleRoot(t), "go.mod"), "require")
	if len(got) == 0 {
		t.Fatal("go.mod requires nothing: not parsed")
	}
	for _, m := range got {
		if !slices.Contains(libraryRequires, m) {
			t.Errorf("the library's go.mod requires %s: every service that imports hybrid would read it; put what needs it in a nested module", m)
		}
	}
}

// TestEveryModuleInWorkspace: every go.mod in the repository is a module
// of go.work, which README's test command and .ci/run test (go list -m),
// and every module go.work uses has a go.mod.
func TestEveryModuleInWorkspace(t *testing.T) {
	root := moduleRoot(t)
	var used []string
	for _, u := range directives(t, filepath.Join(root, "go.work"), "use") {
		used = append(used, filepath.Clean(u))
	}
	var mods []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			mods = append(mods, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(mods)
	slices.Sort(used)
	if !slices.Equal(mods, used) {
		t.Errorf("modules in the tree %v, but go.work uses %v", mods, used)
	}
}

// TestEveryModuleLicensed: every module of go.work has the root's LICENSE
// (BSD-3-Clause) at its top, the one place pkg.go.dev and the Go tools
// look for it: a nested module's zip holds only its own directory.
func TestEveryModuleLicensed(t *testing.T) {
	root := moduleRoot(t)
	want, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatalf("the repository has no LICENSE: %v", err)
	}
	if !bytes.Contains(want, []byte("Redistribution and use in source and binary forms")) {
		t.Error("LICENSE is not the BSD-3-Clause text")
	}
	for _, u := range directives(t, filepath.Join(root, "go.work"), "use") {
		got, err := os.ReadFile(filepath.Join(root, u, "LICENSE"))
		switch {
		case err != nil:
			t.Errorf("module %s has no LICENSE: %v", u, err)
		case !bytes.Equal(got, want):
			t.Errorf("module %s's LICENSE differs from the root's", u)
		}
	}
}

// TestModulesImportExportedAPI: a module a service may require (the root,
// rules, httplimit, grpclimit, promlimit) imports only the exported
// packages of its siblings. Go builds a service's httplimit against the
// newest root module any of the service's requirements names, so an
// internal package imported across modules would have to stay compatible
// from one release to the next with nothing to check it; exported API is
// what semantic versioning governs (DESIGN-NOTES, "Releases"). Their tests
// may import the root's test harnesses (internal/testkit/...): a test is
// built only where its module is the main module, at one commit. bench and
// examples are main modules only (go install, go run), and a module under
// internal/ can be imported by nothing outside the repository.
func TestModulesImportExportedAPI(t *testing.T) {
	root := moduleRoot(t)
	type module struct{ dir, path string }
	var mods []module
	for _, u := range directives(t, filepath.Join(root, "go.work"), "use") {
		dir := filepath.Join(root, u)
		mods = append(mods, module{dir, directives(t, filepath.Join(dir, "go.mod"), "module")[0]})
	}
	rootPath := directives(t, filepath.Join(root, "go.mod"), "module")[0]
	owner := func(importPath string) string { // the module of importPath: the longest prefix
		best := ""
		for _, m := range mods {
			if (importPath == m.path || strings.HasPrefix(importPath, m.path+"/")) && len(m.path) > len(best) {
				best = m.path
			}
		}
		return best
	}
	checked := 0
	for _, m := range mods {
		if m.path == rootPath+"/bench" || m.path == rootPath+"/examples" || strings.Contains(m.path+"/", "/internal/") {
			continue
		}
		err := filepath.WalkDir(m.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != m.dir && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != m.dir {
					return filepath.SkipDir // a module of its own
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			test := strings.HasSuffix(path, "_test.go")
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				o := owner(p)
				switch {
				case o == "" || o == m.path || !strings.Contains(p+"/", "/internal/"):
				case test && strings.HasPrefix(p, rootPath+"/internal/testkit/"):
				default:
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s (module %s) imports %s, an internal package of module %s: import its exported API, or move the package", rel, m.path, p, o)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no Go file checked")
	}
}
