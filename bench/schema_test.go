package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The schema of -json is written once, as the types of results.go and the
// comments on their fields. These tests check that every field has its
// comment, and real output lines against the types.

// outputTypes are the structs bench marshals, by their "type" value.
var outputTypes = map[string]reflect.Type{
	"result": reflect.TypeFor[result](),
	"second": reflect.TypeFor[second](),
	"fault":  reflect.TypeFor[faultSummary](),
	"load":   reflect.TypeFor[loadRow](),
}

// TestSchemaIsDocumented checks that every field of the output types has a
// comment: its own, or that of the field on the line above it (a group
// under one comment, as P50us and P99us).
func TestSchemaIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "results.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"setup"}
	for _, typ := range outputTypes {
		names = append(names, typ.Name())
	}
	found := 0
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || !slices.Contains(names, ts.Name.Name) {
			return true
		}
		found++
		prevLine := 0
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			line := fset.Position(fld.Pos()).Line
			exported := len(fld.Names) == 0 || fld.Names[0].IsExported()
			if exported && fld.Doc == nil && line != prevLine+1 {
				t.Errorf("results.go:%d: %s.%s has no comment", line, ts.Name.Name, fieldName(fld))
			}
			prevLine = fset.Position(fld.End()).Line
		}
		return false
	})
	if found != len(names) {
		t.Errorf("results.go declares %d of the types %q", found, names)
	}
}

func fieldName(f *ast.Field) string {
	if len(f.Names) == 0 {
		return fmt.Sprint(f.Type)
	}
	return f.Names[0].Name
}

// jsonType is the JSON type a Go field marshals to, as checkLine compares
// it: "string", "integer", "number", "number or null", "object", "array of
// string".
func jsonType(typ reflect.Type) string {
	switch typ.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Uint32:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Pointer:
		return jsonType(typ.Elem()) + " or null"
	case reflect.Map:
		return "object"
	case reflect.Slice:
		return "array of " + jsonType(typ.Elem())
	}
	return typ.String()
}

// schemaOf is the JSON fields of each output type, with their JSON types.
func schemaOf(t *testing.T) map[string]map[string]string {
	out := map[string]map[string]string{}
	for name, typ := range outputTypes {
		fields := map[string]string{}
		for _, f := range reflect.VisibleFields(typ) {
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous || !f.IsExported() {
				continue
			}
			if tag == "" || opts != "" {
				t.Fatalf("%s.%s: tag %q, want a name and no options: every field is always there", typ.Name(), f.Name, f.Tag.Get("json"))
			}
			fields[tag] = jsonType(f.Type)
		}
		out[name] = fields
	}
	return out
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

// checkLine returns how one JSON output line differs from the
// schema of its type: an unknown type or field, a missing field, a value
// whose JSON kind is not the documented type.
func checkLine(s map[string]map[string]string, line []byte) []string {
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
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		v, ok := raw[name]
		if !ok {
			bad = append(bad, fmt.Sprintf("no field %q", name))
			continue
		}
		if k := jsonKind(v); !jsonFits(doc[name], k) {
			bad = append(bad, fmt.Sprintf("%q is %s %s, want %s", name, k, v, doc[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if _, ok := doc[name]; !ok {
			bad = append(bad, fmt.Sprintf("field %q is not in the %q type", name, typ))
		}
	}
	return bad
}

// decodeStrict checks one JSON output line against the type of its
// type and decodes it into v, a pointer to the struct bench marshals for
// that type.
func decodeStrict(t *testing.T, line []byte, v any) {
	t.Helper()
	for _, m := range checkLine(schemaOf(t), line) {
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
	s := map[string]map[string]string{"x": {"type": "string", "n": "integer", "f": "number", "p": "number or null",
		"o": "object", "a": "array of string", "s": "string"}}
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
