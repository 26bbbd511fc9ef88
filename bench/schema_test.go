package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The JSON schema of bench's output is written once, in the "# Output"
// section of doc.go. These helpers read it from there, so that the tests
// check the production structs and real output lines against the doc
// itself rather than against a copy.

// outputTypes are the structs bench marshals, by their "type" value.
var outputTypes = map[string]reflect.Type{
	"result": reflect.TypeFor[result](),
	"second": reflect.TypeFor[second](),
	"fault":  reflect.TypeFor[faultSummary](),
	"load":   reflect.TypeFor[loadRow](),
}

// docTypes are the JSON types doc.go may give a field.
var docTypes = []string{"string", "integer", "number", "number or null", "object", "array of string"}

// docField is one documented field of an output object.
type docField struct {
	name string // JSON name: "p50_us"
	typ  string // one of docTypes
	line int    // in doc.go, for messages
}

// docSchema is the documented fields of each object type, in the doc's
// order.
type docSchema map[string][]docField

// field returns the documented field of object type typ named name.
func (s docSchema) field(typ, name string) (docField, bool) {
	i := slices.IndexFunc(s[typ], func(f docField) bool { return f.name == name })
	if i < 0 {
		return docField{}, false
	}
	return s[typ][i], true
}

// docFieldLine is a field line of a block, after the comment's "//\t":
// one or more comma-separated names, the type and the meaning, in
// columns separated by at least two spaces.
var docFieldLine = regexp.MustCompile(`^(\S.*?)  +(` + strings.Join(docTypes, "|") + `)  +(\S.*)$`)

// docTypeLine is the line that starts a block: its type field and value.
var docTypeLine = regexp.MustCompile(`^type  +string  +"([a-z]+)"$`)

// parseSchema reads the output schema from a doc comment: a block is a
// run of lines starting with "//\t" whose first line is `type  string
// "<name>"`, each further line either a field line or a continuation of
// the field line above, indented to its meaning column.
func parseSchema(r io.Reader) (docSchema, error) {
	s := docSchema{}
	var block string   // the object type of the block being read; "" outside one
	var meaningCol int // of the last field line
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text, inBlock := strings.CutPrefix(sc.Text(), "//\t")
		if !inBlock {
			block = ""
			continue
		}
		if block == "" {
			m := docTypeLine.FindStringSubmatch(text)
			if m == nil {
				continue // a code block that is no schema
			}
			block = m[1]
			if _, dup := s[block]; dup {
				return nil, fmt.Errorf("line %d: a second block for %q", n, block)
			}
			s[block] = []docField{{name: "type", typ: "string", line: n}}
			meaningCol = strings.Index(text, `"`)
			continue
		}
		if strings.HasPrefix(text, " ") {
			if indent := len(text) - len(strings.TrimLeft(text, " ")); indent != meaningCol {
				return nil, fmt.Errorf("line %d: continuation %q indented %d, want the meaning column %d", n, text, indent, meaningCol)
			}
			continue
		}
		m := docFieldLine.FindStringSubmatchIndex(text)
		if m == nil {
			return nil, fmt.Errorf("line %d: %q is neither a field (names, one of the types %q, meaning) nor a continuation", n, text, docTypes)
		}
		typ := text[m[4]:m[5]]
		meaningCol = m[6]
		for name := range strings.SplitSeq(text[m[2]:m[3]], ",") {
			name = strings.TrimSpace(name)
			if _, dup := s.field(block, name); dup || name == "" {
				return nil, fmt.Errorf("line %d: field %q of %q empty or documented twice", n, name, block)
			}
			s[block] = append(s[block], docField{name: name, typ: typ, line: n})
		}
	}
	return s, sc.Err()
}

// parsedDoc is doc.go's schema, read once per test binary.
var parsedDoc = sync.OnceValues(func() (docSchema, error) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		return nil, err
	}
	s, err := parseSchema(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("doc.go: %w", err)
	}
	return s, nil
})

// schema returns doc.go's schema of bench's JSON output.
func schema(t *testing.T) docSchema {
	t.Helper()
	s, err := parsedDoc()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// goFits reports whether a Go type marshals to the documented JSON type.
func goFits(doc string, typ reflect.Type) bool {
	switch doc {
	case "string":
		return typ.Kind() == reflect.String
	case "integer":
		switch typ.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return true
		}
	case "number":
		return typ.Kind() == reflect.Float64 || typ.Kind() == reflect.Float32
	case "number or null":
		return typ.Kind() == reflect.Pointer && goFits("number", typ.Elem())
	case "object":
		return typ.Kind() == reflect.Map && typ.Key().Kind() == reflect.String
	case "array of string":
		return typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String
	}
	return false
}

// structMismatches returns how the JSON form of struct typ differs from
// the documented fields: fields missing on either side, Go types that do
// not fit the documented one, fields that may be left out (omitempty).
func structMismatches(doc []docField, typ reflect.Type) []string {
	var bad []string
	inStruct := map[string]bool{}
	for _, f := range reflect.VisibleFields(typ) {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct && name == "":
			continue // encoding/json promotes its fields: they come next, each checked
		case !f.IsExported() || name == "-":
			continue
		case name == "":
			name = f.Name
		}
		inStruct[name] = true
		i := slices.IndexFunc(doc, func(d docField) bool { return d.name == name })
		if i < 0 {
			bad = append(bad, fmt.Sprintf("%s.%s (%q) is not documented", typ.Name(), f.Name, name))
			continue
		}
		if !goFits(doc[i].typ, f.Type) {
			bad = append(bad, fmt.Sprintf("%s.%s is %s, but doc.go:%d documents %q as %s", typ.Name(), f.Name, f.Type, doc[i].line, name, doc[i].typ))
		}
		if slices.Contains(strings.Split(opts, ","), "omitempty") {
			bad = append(bad, fmt.Sprintf("%s.%s is omitempty, but every documented field is always there", typ.Name(), f.Name))
		}
	}
	for _, d := range doc {
		if !inStruct[d.name] {
			bad = append(bad, fmt.Sprintf("doc.go:%d documents %q, which %s has not", d.line, d.name, typ.Name()))
		}
	}
	return bad
}

// TestSchemaMatchesStructs checks the structs bench marshals against
// doc.go: every documented field is there, every field is documented, and
// each has a Go type that marshals to the documented JSON type.
func TestSchemaMatchesStructs(t *testing.T) {
	s := schema(t)
	if got, want := slices.Sorted(maps.Keys(s)), slices.Sorted(maps.Keys(outputTypes)); !slices.Equal(got, want) {
		t.Fatalf("doc.go documents the types %q, want %q (the structs bench marshals)", got, want)
	}
	for name, typ := range outputTypes {
		if len(s[name]) < 2 {
			t.Errorf("doc.go documents %d fields of %q, want type and more", len(s[name]), name)
		}
		for _, m := range structMismatches(s[name], typ) {
			t.Errorf("%q: %s", name, m)
		}
	}
}

// TestStructMismatches checks that the comparison of doc and struct
// reports each kind of disagreement.
func TestStructMismatches(t *testing.T) {
	doc := []docField{{"type", "string", 1}, {"n", "integer", 2}, {"x", "number or null", 3}}
	tests := []struct {
		name string
		typ  reflect.Type
		want int
	}{
		{"agrees", reflect.TypeFor[struct {
			Type string   `json:"type"`
			N    int64    `json:"n"`
			X    *float64 `json:"x"`
			skip int
			Skip string `json:"-"`
		}](), 0},
		{"undocumented field", reflect.TypeFor[struct {
			Type string   `json:"type"`
			N    int64    `json:"n"`
			X    *float64 `json:"x"`
			Y    int      `json:"y"`
		}](), 1},
		{"documented field missing", reflect.TypeFor[struct {
			Type string `json:"type"`
			N    int64  `json:"n"`
		}](), 1},
		{"wrong types", reflect.TypeFor[struct {
			Type string  `json:"type"`
			N    float64 `json:"n"`
			X    float64 `json:"x"`
		}](), 2},
		{"omitempty", reflect.TypeFor[struct {
			Type string   `json:"type"`
			N    int64    `json:"n,omitempty"`
			X    *float64 `json:"x"`
		}](), 1},
		{"untagged name", reflect.TypeFor[struct {
			Type string   `json:"type"`
			N    int64    `json:"n"`
			X    *float64 `json:"x"`
			Z    int
		}](), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := structMismatches(doc, tt.typ); len(got) != tt.want {
				t.Errorf("structMismatches = %q, want %d", got, tt.want)
			}
		})
	}
}

func TestParseSchema(t *testing.T) {
	const good = `// A "result":
//
//	type            string           "result"
//	a, b            number           two
//	                                 fields
//	c               array of string  may be
//	                                 empty
//
//	go run ./bench    # not a schema
//
//	type  string  "fault"
//	d     number or null  when
//	                      or null
package main
`
	s, err := parseSchema(strings.NewReader(good))
	if err != nil {
		t.Fatalf("parseSchema(good) = %v, want nil", err)
	}
	want := docSchema{
		"result": {{"type", "string", 3}, {"a", "number", 4}, {"b", "number", 4}, {"c", "array of string", 6}},
		"fault":  {{"type", "string", 11}, {"d", "number or null", 12}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("parseSchema(good) = %v, want %v", s, want)
	}
	bad := map[string]string{
		"unknown type":  "//\ttype  string  \"x\"\n//\tn     float   a number\n",
		"misaligned":    "//\ttype  string  \"x\"\n//\tn     number  a number\n//\t         and more\n",
		"no meaning":    "//\ttype  string  \"x\"\n//\tn     number\n",
		"one space":     "//\ttype  string  \"x\"\n//\tn number  a number\n",
		"twice":         "//\ttype  string  \"x\"\n//\tn     number  a\n//\tn     number  b\n",
		"second block":  "//\ttype  string  \"x\"\n//\n//\ttype  string  \"x\"\n",
		"empty in list": "//\ttype  string  \"x\"\n//\tn,    number  a\n",
	}
	for name, doc := range bad {
		if s, err := parseSchema(strings.NewReader(doc)); err == nil {
			t.Errorf("parseSchema(%s) = %v, nil; want an error", name, s)
		}
	}
}

// jsonKind returns the JSON kind of a value ("string", "integer",
// "number", "null", "object", "array of string", "array", "boolean"),
// integer for a number without fraction or exponent.
func jsonKind(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid"
	}
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return "integer"
		}
		return "number"
	case map[string]any:
		return "object"
	case []any:
		for _, e := range v {
			if _, ok := e.(string); !ok {
				return "array"
			}
		}
		return "array of string"
	}
	return "invalid"
}

// jsonFits reports whether a value of JSON kind fits the documented type.
func jsonFits(doc, kind string) bool {
	switch doc {
	case "number":
		return kind == "number" || kind == "integer"
	case "number or null":
		return kind == "number" || kind == "integer" || kind == "null"
	}
	return kind == doc
}

// checkLine returns how one JSON output line differs from doc.go's
// schema of its type: an unknown type or field, a missing field, a value
// whose JSON kind is not the documented type.
func checkLine(s docSchema, line []byte) []string {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return []string{err.Error()}
	}
	var typ string
	_ = json.Unmarshal(raw["type"], &typ)
	doc, ok := s[typ]
	if !ok {
		return []string{fmt.Sprintf("type %q, want one of %q", typ, slices.Sorted(maps.Keys(s)))}
	}
	var bad []string
	for _, f := range doc {
		v, ok := raw[f.name]
		if !ok {
			bad = append(bad, fmt.Sprintf("no field %q (doc.go:%d)", f.name, f.line))
			continue
		}
		if k := jsonKind(v); !jsonFits(f.typ, k) {
			bad = append(bad, fmt.Sprintf("%q is %s %s, doc.go:%d documents %s", f.name, k, v, f.line, f.typ))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if _, ok := s.field(typ, name); !ok {
			bad = append(bad, fmt.Sprintf("field %q is not documented for %q", name, typ))
		}
	}
	return bad
}

// decodeStrict checks one JSON output line against doc.go's schema of its
// type and decodes it into v, a pointer to the struct bench marshals for
// that type.
func decodeStrict(t *testing.T, line []byte, v any) {
	t.Helper()
	for _, m := range checkLine(schema(t), line) {
		t.Errorf("line %s: %s", line, m)
	}
	var typ struct{ Type string }
	_ = json.Unmarshal(line, &typ)
	if want, got := outputTypes[typ.Type], reflect.TypeOf(v); want != nil && got != reflect.PointerTo(want) {
		t.Fatalf("line %s: decodeStrict into %v, want %v", line, got, reflect.PointerTo(want))
	}
	if err := json.Unmarshal(line, v); err != nil {
		t.Fatalf("line %s: %v", line, err)
	}
}

func TestCheckLine(t *testing.T) {
	s := docSchema{"x": {{"type", "string", 1}, {"n", "integer", 2}, {"f", "number", 3}, {"p", "number or null", 4},
		{"o", "object", 5}, {"a", "array of string", 6}, {"s", "string", 7}}}
	const good = `{"type":"x","n":3,"f":0.5,"p":null,"o":{"k":1},"a":[],"s":"v"}`
	if got := checkLine(s, []byte(good)); len(got) != 0 {
		t.Errorf("checkLine(%s) = %q, want nothing", good, got)
	}
	if got := checkLine(s, []byte(`{"type":"x","n":3,"f":2,"p":1.5,"o":{},"a":["u"],"s":""}`)); len(got) != 0 {
		t.Errorf("checkLine(integral number, number in or-null) = %q, want nothing", got)
	}
	bad := []string{
		`{"type":"y"}`,
		`{"type":"x","n":3,"f":0.5,"p":null,"o":{"k":1},"a":[]}`,
		`{"type":"x","n":3,"f":0.5,"p":null,"o":{"k":1},"a":[],"s":"v","extra":1}`,
		`{"type":"x","n":3.5,"f":0.5,"p":null,"o":{"k":1},"a":[],"s":"v"}`,
		`{"type":"x","n":3,"f":null,"p":null,"o":{"k":1},"a":[],"s":"v"}`,
		`{"type":"x","n":3,"f":0.5,"p":"1","o":{"k":1},"a":[],"s":"v"}`,
		`{"type":"x","n":3,"f":0.5,"p":null,"o":null,"a":[],"s":"v"}`,
		`{"type":"x","n":3,"f":0.5,"p":null,"o":{"k":1},"a":null,"s":"v"}`,
		`{"type":"x","n":3,"f":0.5,"p":null,"o":{"k":1},"a":[1],"s":"v"}`,
		`{"type":"x","n":3,"f":0.5,"p":null,"o":{"k":1},"a":[],"s":7}`,
	}
	for _, line := range bad {
		if got := checkLine(s, []byte(line)); len(got) != 1 {
			t.Errorf("checkLine(%s) = %q, want one complaint", line, got)
		}
	}
}
