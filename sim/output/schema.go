package output

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// BatchRows is the most rows one record batch holds.
const BatchRows = 1 << 16

// maxInt16Dict is the largest dictionary that int16 indices can address.
const maxInt16Dict = math.MaxInt16

// colKind is the Go kind of a tagged field.
type colKind uint8

const (
	kindInt colKind = iota // Go int, stored as int64
	kindInt32
	kindInt64
	kindUint64
	kindFloat64
	kindString
	kindBool
)

// validKinds lists the supported field types, for error messages.
const validKinds = "int, int32, int64, uint64, float64, string, bool, or a pointer to one of these"

// fieldSpec is one tagged struct field, i.e. one column.
type fieldSpec struct {
	column   string // Arrow column name (the tag)
	goName   string // Go field name, for messages
	index    int    // field index in the struct
	kind     colKind
	nullable bool // pointer field
	dict     bool // ",dict" string field
}

// structSpec is the column layout of a row struct.
type structSpec struct {
	typ    reflect.Type
	fields []fieldSpec
}

// specOf reads the arrow tags of struct type t.
func specOf(t reflect.Type) (*structSpec, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("output: row type %s is not a struct", t)
	}
	s := &structSpec{typ: t}
	seen := map[string]string{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("arrow")
		if !ok || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			return nil, fmt.Errorf("output: %s.%s: empty arrow column name", t.Name(), sf.Name)
		}
		if !sf.IsExported() {
			return nil, fmt.Errorf("output: %s.%s: arrow-tagged field must be exported", t.Name(), sf.Name)
		}
		if prev, dup := seen[name]; dup {
			return nil, fmt.Errorf("output: %s.%s: column %q already used by field %s", t.Name(), sf.Name, name, prev)
		}
		seen[name] = sf.Name
		f := fieldSpec{column: name, goName: sf.Name, index: i}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			f.nullable = true
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Int:
			f.kind = kindInt
		case reflect.Int32:
			f.kind = kindInt32
		case reflect.Int64:
			f.kind = kindInt64
		case reflect.Uint64:
			f.kind = kindUint64
		case reflect.Float64:
			f.kind = kindFloat64
		case reflect.String:
			f.kind = kindString
		case reflect.Bool:
			f.kind = kindBool
		default:
			return nil, fmt.Errorf("output: %s.%s: unsupported type %s (valid: %s)", t.Name(), sf.Name, sf.Type, validKinds)
		}
		switch opts {
		case "":
		case "dict":
			if f.kind != kindString {
				return nil, fmt.Errorf("output: %s.%s: ,dict needs a string field, not %s", t.Name(), sf.Name, sf.Type)
			}
			f.dict = true
		default:
			return nil, fmt.Errorf("output: %s.%s: unknown arrow tag option %q (valid: dict)", t.Name(), sf.Name, opts)
		}
		s.fields = append(s.fields, f)
	}
	if len(s.fields) == 0 {
		return nil, fmt.Errorf("output: row type %s has no arrow-tagged fields", t)
	}
	return s, nil
}

// arrowType is the column's Arrow type; dictLen is the dictionary size of a
// dict column (it picks the index width).
func (f *fieldSpec) arrowType(dictLen int) arrow.DataType {
	if f.dict {
		return dictType(dictLen)
	}
	switch f.kind {
	case kindInt, kindInt64:
		return arrow.PrimitiveTypes.Int64
	case kindInt32:
		return arrow.PrimitiveTypes.Int32
	case kindUint64:
		return arrow.PrimitiveTypes.Uint64
	case kindFloat64:
		return arrow.PrimitiveTypes.Float64
	case kindBool:
		return arrow.FixedWidthTypes.Boolean
	default:
		return arrow.BinaryTypes.String
	}
}

// dictType is dictionary<int16, utf8>, or dictionary<int32, utf8> for a
// dictionary with more than 32,767 values.
func dictType(n int) *arrow.DictionaryType {
	if n > maxInt16Dict {
		return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	}
	return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
}

// schemaMetadata is schema_version plus the caller's keys, sorted by key. A
// caller's schema_version is replaced: the file is in this package's schema.
func schemaMetadata(meta map[string]string) arrow.Metadata {
	keys := make([]string, 0, len(meta)+1)
	for k := range meta {
		if k != MetaSchemaVersion {
			keys = append(keys, k)
		}
	}
	keys = append(keys, MetaSchemaVersion)
	slices.Sort(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		if k == MetaSchemaVersion {
			vals[i] = SchemaVersion
		} else {
			vals[i] = meta[k]
		}
	}
	return arrow.NewMetadata(keys, vals)
}

// metadataMap converts Arrow schema metadata to a map.
func metadataMap(md arrow.Metadata) map[string]string {
	m := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	return m
}

// validUTF8 returns s with invalid UTF-8 sequences replaced by U+FFFD: Arrow
// utf8 columns must hold valid UTF-8, and readers in other languages reject
// or mangle anything else.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
