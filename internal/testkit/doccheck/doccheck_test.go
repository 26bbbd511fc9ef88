package doccheck

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moduleRoot is the directory of go.mod, three levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// packageDirs returns every directory under root that holds Go files,
// skipping testdata, hidden directories and underscore directories as the
// go command does.
func packageDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestExportedNamesDocumented fails for each package of the module (not a
// command, not a test file) whose doc comment does not start "Package
// <name> ", and for each exported name go doc shows without a doc comment.
func TestExportedNamesDocumented(t *testing.T) {
	root := moduleRoot(t)
	checked := 0
	for _, dir := range packageDirs(t, root) {
		bp, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				continue
			}
			t.Fatalf("%s: %v", dir, err)
		}
		if bp.Name == "main" || len(bp.GoFiles) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, dir)
		for _, problem := range undocumented(t, dir, bp) {
			t.Errorf("%s: %s", filepath.ToSlash(rel), problem)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d packages; the walk missed the module", checked)
	}
}

// undocumented lists what go doc would show without a comment in the
// package bp of dir, built from its non-test files for this platform.
func undocumented(t *testing.T, dir string, bp *build.Package) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, bp.ImportPath)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var out []string
	if !strings.HasPrefix(p.Doc, "Package "+p.Name+" ") {
		out = append(out, fmt.Sprintf("package doc does not start %q", "Package "+p.Name+" "))
	}
	out = append(out, values("", p.Consts)...)
	out = append(out, values("", p.Vars)...)
	for _, f := range p.Funcs {
		if f.Doc == "" {
			out = append(out, "func "+f.Name)
		}
	}
	for _, typ := range p.Types {
		if typ.Doc == "" {
			out = append(out, "type "+typ.Name)
		}
		out = append(out, members(fset, typ)...)
		out = append(out, values(typ.Name+": ", typ.Consts)...)
		out = append(out, values(typ.Name+": ", typ.Vars)...)
		for _, f := range typ.Funcs {
			if f.Doc == "" {
				out = append(out, "func "+f.Name)
			}
		}
		for _, m := range typ.Methods {
			if m.Doc == "" {
				out = append(out, "method "+typ.Name+"."+m.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// values lists the exported constants or variables without a comment. As
// go doc shows them, a declaration's comment documents every name in it;
// without one, each spec needs its own (above it, or at the end of its
// line).
func values(prefix string, vs []*doc.Value) []string {
	var out []string
	for _, v := range vs {
		if v.Doc != "" {
			continue
		}
		for _, spec := range v.Decl.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok || vs.Doc != nil || vs.Comment != nil {
				continue
			}
			for _, n := range vs.Names {
				if n.IsExported() {
					out = append(out, prefix+v.Decl.Tok.String()+" "+n.Name)
				}
			}
		}
	}
	return out
}

// members lists the exported struct fields and interface methods of typ
// without a comment. go doc shows a struct or an interface as its source,
// so a member is documented by a comment above it or at the end of its
// line, or by the comment above a run of adjacent members (no blank line
// between them) that names it: "Calls is ...; Errors how many of them
// failed" documents Calls and the Errors below it. go/doc has already
// dropped the unexported members.
func members(fset *token.FileSet, typ *doc.Type) []string {
	var out []string
	for _, spec := range typ.Decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		var list *ast.FieldList
		kind := "field"
		switch x := ts.Type.(type) {
		case *ast.StructType:
			list = x.Fields
		case *ast.InterfaceType:
			list, kind = x.Methods, "interface method"
		}
		if list == nil {
			continue
		}
		var head *ast.CommentGroup // the comment above the current run
		prevLine := -1
		for _, f := range list.List {
			line := fset.Position(f.Pos()).Line
			switch {
			case f.Doc != nil:
				head = f.Doc
			case line != prevLine+1:
				head = nil // a blank line (or the first member) starts a run
			}
			prevLine = fset.Position(f.End()).Line
			if f.Doc != nil || f.Comment != nil {
				continue
			}
			for _, n := range fieldNames(f) {
				if ast.IsExported(n) && !names(head, n) {
					out = append(out, kind+" "+typ.Name+"."+n)
				}
			}
		}
	}
	return out
}

// fieldNames is a field's names, or for an embedded one its type's name.
func fieldNames(f *ast.Field) []string {
	if len(f.Names) > 0 {
		names := make([]string, len(f.Names))
		for i, n := range f.Names {
			names[i] = n.Name
		}
		return names
	}
	t := f.Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.Ident:
		return []string{x.Name}
	case *ast.SelectorExpr:
		return []string{x.Sel.Name}
	}
	return nil
}

// names reports whether comment c holds name as a word.
func names(c *ast.CommentGroup, name string) bool {
	if c == nil {
		return false
	}
	text := c.Text()
	for i := strings.Index(text, name); i >= 0; {
		end := i + len(name)
		if (i == 0 || !isWordByte(text[i-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		j := strings.Index(text[end:], name)
		if j < 0 {
			break
		}
		i = end + j
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// TestUndocumentedFindsEachKind runs the check on testdata/undoc, which
// holds one undocumented name of each kind.
func TestUndocumentedFindsEachKind(t *testing.T) {
	bp, err := build.ImportDir(filepath.Join("testdata", "undoc"), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := undocumented(t, bp.Dir, bp)
	want := []string{
		"const Five",
		"field Documented.G",
		"field Documented.H",
		"func Func",
		"func NewBare",
		"interface method Iface.N",
		"method Documented.Bare",
		`package doc does not start "Package undoc "`,
		"type Bare",
		"var Var",
	}
	if !slices.Equal(got, want) {
		t.Errorf("undocumented(testdata/undoc) =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReadmeCommands: README.md shows the main job and the test command as
// code blocks of their own, and .ci/run runs that test command (with flags
// of its own added), so that what CI runs is what the README tells a
// newcomer to run.
func TestReadmeCommands(t *testing.T) {
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const mainJob, tests = "go run ./bench", "go test -race -p 1 $(go list -f '{{.Dir}}/...' -m)"
	for _, cmd := range []string{mainJob, tests} {
		if !strings.Contains(string(readme), "```\n"+cmd+"\n```\n") {
			t.Errorf("README.md has no code block holding just %q", cmd)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, line := range strings.Split(string(ci), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "go" && f[1] == "test" {
			runs = append(runs, line)
		}
	}
	if len(runs) != 1 {
		t.Fatalf(".ci/run has %d go test lines, want 1: %q", len(runs), runs)
	}
	if !subsequence(strings.Fields(tests), strings.Fields(runs[0])) {
		t.Errorf(".ci/run runs %q, which is not README's %q with flags added", runs[0], tests)
	}
}

// subsequence reports whether the words of want appear in got in order.
func subsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
