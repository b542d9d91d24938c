package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// This file checks a YAML document against the Go types of a scenario before
// decoding it, so that every error names the dotted field path
// ("parallel.tp: expected an integer, got "eight" (line 12)") and unknown keys
// get a suggestion. yaml.v3's own KnownFields errors name only the Go type.

// checkNode walks n against type t (a struct, pointer, map or scalar type)
// and records the dotted paths of every key present in set.
func checkNode(n *yaml.Node, t reflect.Type, path string, set fieldSet) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: expected a mapping of fields, got %s %s", orRoot(path), describe(n), at(n))
		}
		fields := yamlFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			full := join(path, key)
			if seen[key] {
				return fmt.Errorf("%s: given twice %s", full, at(k))
			}
			seen[key] = true
			f, ok := fields[key]
			if !ok {
				return fmt.Errorf("%s: unknown field %s; %s", full, at(k), suggest(key, fields))
			}
			set[full] = true
			if err := checkNode(v, f.Type, full, set); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: expected a mapping, got %s %s", orRoot(path), describe(n), at(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			full := join(path, n.Content[i].Value)
			set[full] = true
			if err := checkNode(n.Content[i+1], t.Elem(), full, set); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: expected a list, got %s %s", path, describe(n), at(n))
		}
		for i, c := range n.Content {
			if err := checkNode(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), set); err != nil {
				return err
			}
		}
		return nil
	}
	return checkScalar(n, t.Kind(), path)
}

func checkScalar(n *yaml.Node, k reflect.Kind, path string) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s: expected a single value, got %s %s", path, describe(n), at(n))
	}
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n.Tag != "!!int" {
			// Accept floats that are whole numbers written as 1e3 / 8.0.
			if n.Tag == "!!float" {
				if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == float64(int64(f)) {
					n.Tag, n.Value = "!!int", strconv.FormatInt(int64(f), 10)
					return nil
				}
			}
			return fmt.Errorf("%s: expected an integer, got %q %s", path, n.Value, at(n))
		}
	case reflect.Float64, reflect.Float32:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			return fmt.Errorf("%s: expected a number, got %q %s", path, n.Value, at(n))
		}
	case reflect.Bool:
		if n.Tag != "!!bool" {
			return fmt.Errorf("%s: expected true or false, got %q %s", path, n.Value, at(n))
		}
	case reflect.String:
		if n.Tag == "!!null" {
			return fmt.Errorf("%s: expected a value, got nothing %s", path, at(n))
		}
	}
	return nil
}

// at says where a node stands: "(line N)" in a file, or "(set outside the
// file)" for an Override's value.
func at(n *yaml.Node) string {
	if n.Line == 0 {
		return "(set outside the file)"
	}
	return fmt.Sprintf("(line %d)", n.Line)
}

// DescribeNode names what a node holds, for errors: "a mapping", "a list"
// or the quoted scalar.
func DescribeNode(n *yaml.Node) string { return describe(n) }

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func orRoot(path string) string {
	if path == "" {
		return "scenario"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldCache memoises yamlFields per type: sweeps check thousands of points
// from several goroutines.
var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

// yamlFields maps the YAML keys of struct type t to their fields. The map is
// shared; callers must not modify it.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		m[name] = f
	}
	fieldCache.Store(t, m)
	return m
}

// suggest returns "did you mean X?" for the closest known key, or the list of
// valid keys when nothing is close.
func suggest(key string, fields map[string]reflect.StructField) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	return Suggest(key, names)
}

// Suggest returns "did you mean X?" for the name closest to key, or the
// sorted list of valid names when nothing is close.
func Suggest(key string, names []string) string {
	names = slices.Clone(names)
	sort.Strings(names)
	if best := Closest(key, names); best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "valid fields: " + strings.Join(names, ", ")
}

// Closest returns the name nearest to s by edit distance when it is close
// (at most max(2, len(s)/3) edits), or "". Ties go to the longer common
// prefix, since typos are more often at the end ("tpp" → "tp", not "pp"),
// then to the earlier name.
func Closest(s string, names []string) string {
	best, bestD, bestP := "", 1<<30, -1
	for _, k := range names {
		d, p := editDistance(s, k), commonPrefix(s, k)
		if d < bestD || (d == bestD && p > bestP) {
			best, bestD, bestP = k, d, p
		}
	}
	if best != "" && bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// CheckFieldPath reports whether a dotted path ("parallel.tp") names a field
// of the scenario format, with a suggestion when it does not. Sweeps use it
// to reject a bad field before any work starts.
func CheckFieldPath(path string) error {
	t := reflect.TypeOf(Scenario{})
	parts := strings.Split(path, ".")
	for i, p := range parts {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return fmt.Errorf("%s: %s is not a group of fields", path, strings.Join(parts[:i], "."))
		}
		fields := yamlFields(t)
		f, ok := fields[p]
		if !ok {
			return fmt.Errorf("%s: unknown field; %s", path, suggest(p, fields))
		}
		t = f.Type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		return fmt.Errorf("%s: is a group of fields, not a single value", path)
	}
	return nil
}

// CheckDocument checks a scenario document's root mapping against the
// format: known fields, each given once, values of the right type.
func CheckDocument(root *yaml.Node) error {
	return checkNode(root, reflect.TypeOf(Scenario{}), "", fieldSet{})
}

// CheckValue checks one value for the field at path (CheckFieldPath must
// accept the path); where names the value in the error ("parallel.tp[2]").
func CheckValue(path, where string, v *yaml.Node) error {
	return checkNode(v, fieldType(path), where, fieldSet{})
}

// fieldType is the Go type of a dotted scenario field.
func fieldType(path string) reflect.Type {
	t := reflect.TypeOf(Scenario{})
	for _, p := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		t = yamlFields(t)[p].Type
	}
	return t
}

// SetFieldPath sets the value at a dotted path in a scenario document,
// creating intermediate mappings as needed. The document must be a mapping
// (or a document node holding one).
func SetFieldPath(doc *yaml.Node, path string, value *yaml.Node) error {
	if err := CheckFieldPath(path); err != nil {
		return err
	}
	return setPath(doc, path, value)
}

// setPath is SetFieldPath without checking the path against the format
// (sweeps check every path once when loading, then set it for every point).
func setPath(doc *yaml.Node, path string, value *yaml.Node) error {
	return setParts(doc, path, strings.Split(path, "."), value)
}

// setParts is setPath with the path already split at its dots.
func setParts(doc *yaml.Node, path string, parts []string, value *yaml.Node) error {
	n := doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			n.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		}
		n = n.Content[0]
	}
	for i, p := range parts {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: %s is not a mapping in the base scenario", path, strings.Join(parts[:i], "."))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				if i == len(parts)-1 {
					n.Content[j+1] = value
					return nil
				}
				next = n.Content[j+1]
				break
			}
		}
		if next == nil {
			key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}
			if i == len(parts)-1 {
				n.Content = append(n.Content, key, value)
				return nil
			}
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			n.Content = append(n.Content, key, next)
		}
		n = next
	}
	return nil
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
