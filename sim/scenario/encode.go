package scenario

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Encode writes a scenario document as a file, field by field in the
// registry's order (Knobs), leaving out every field at its zero value (an
// empty string, 0, false, an empty list, an unset optional value), so that
// what is not written takes the documented default. Top-level fields come
// first, then one block per section, each after a blank line; free text
// (Knob.Quote) is double-quoted with Go escaping, which is valid YAML.
// Generators (tools/internal/scenfile) write their files with it.
func Encode(s *Scenario) []byte {
	var b bytes.Buffer
	var open []string // the blocks the last written field sits in
	for _, k := range Knobs {
		v, ok := k.Field(s)
		if !ok || isZero(v) {
			continue
		}
		parts := strings.Split(k.Path, ".")
		blocks := parts[:len(parts)-1]
		common := 0
		for common < len(open) && common < len(blocks) && open[common] == blocks[common] {
			common++
		}
		for i := common; i < len(blocks); i++ {
			if i == 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s%s:\n", strings.Repeat("  ", i), blocks[i])
		}
		open = blocks
		fmt.Fprintf(&b, "%s%s: %s\n", strings.Repeat("  ", len(blocks)), parts[len(parts)-1], encodeValue(k, v))
	}
	return b.Bytes()
}

func isZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return v.IsNil() || (v.Kind() != reflect.Pointer && v.Len() == 0)
	}
	return v.IsZero()
}

func encodeValue(k *Knob, v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		if k.Quote {
			return strconv.Quote(v.String())
		}
		return v.String()
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Map:
		keys := v.MapKeys()
		items := make([]string, len(keys))
		for i, key := range keys {
			items[i] = fmt.Sprintf("%v: %v", key.Interface(), v.MapIndex(key).Interface())
		}
		slices.Sort(items)
		return "{" + strings.Join(items, ", ") + "}"
	case reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			if e := v.Index(i); e.Kind() == reflect.Struct {
				items[i] = encodeStruct(e)
				continue
			}
			items[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return fmt.Sprint(v.Interface())
}

// encodeStruct writes a list item with fields (cluster.node_groups) as a
// flow mapping of its non-zero fields: {gpu: h100-sxm, nodes: 64}.
func encodeStruct(v reflect.Value) string {
	var parts []string
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if f := v.Field(i); name != "" && name != "-" && !f.IsZero() {
			val := fmt.Sprint(f.Interface())
			if f.Kind() == reflect.Float64 {
				val = strconv.FormatFloat(f.Float(), 'g', -1, 64)
			}
			parts = append(parts, name+": "+val)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
