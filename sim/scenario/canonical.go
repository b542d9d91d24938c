package scenario

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// The canonical form's blocks are written by a plain encoder compiled once
// per block type instead of encoding/json: every sweep point is hashed for
// its run id when the sweep loads, and json.Marshal's five calls were
// ≈ 6.2 µs of a point's ≈ 9 µs run id (docs/design.md "Speed", load24).
// The encoder writes the bytes json.Marshal writes, or declines: a type it
// does not know (maps, interfaces, marshalers, embedded structs, tag
// options other than omitempty) declines at compile time, a value it does
// not know (a string needing an escape, a NaN or infinite float) while
// writing; CanonicalJSON then uses json.Marshal for that block, so the
// bytes, and json.Marshal's error, are those of json.Marshal in every case
// (TestCanonicalEncoderEqualsJSON).

// jsonType is how one type is written. The encoder reads values through
// unsafe pointers at the offsets and sizes reflect gives (reflect.Value's
// Field was half of its time); compileJSON admits only the kinds whose
// memory layout it reads below.
type jsonType struct {
	kind   reflect.Kind
	size   uintptr     // the type's size (list elements)
	n      int         // array length
	fields []jsonField // struct: the fields encoding/json writes, in order
	elem   *jsonType   // pointer, slice and array elements
}

// jsonField is one struct field encoding/json writes.
type jsonField struct {
	offset    uintptr
	key       string // `"name":`
	omitEmpty bool
	typ       *jsonType
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumber    = reflect.TypeFor[json.Number]()
)

// canonicalTypes holds the compiled encoders of the canonical form's block
// types (nil: the type goes through encoding/json).
var canonicalTypes sync.Map // reflect.Type → *jsonType

// canonicalType is t's compiled encoder, nil when encoding/json must write it.
func canonicalType(t reflect.Type) *jsonType {
	if v, ok := canonicalTypes.Load(t); ok {
		return v.(*jsonType)
	}
	jt := compileJSON(t, map[reflect.Type]bool{})
	canonicalTypes.Store(t, jt)
	return jt
}

// compileJSON compiles t's encoder; nil for anything encoding/json writes
// by rules the encoder does not follow. busy guards against recursive types.
func compileJSON(t reflect.Type, busy map[reflect.Type]bool) *jsonType {
	if busy[t] || t == jsonNumber || t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil
	}
	jt := &jsonType{kind: t.Kind(), size: t.Size()}
	if t.Kind() == reflect.Array {
		jt.n = t.Len()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Float64:
		return jt
	case reflect.Pointer, reflect.Array:
		busy[t] = true
		defer delete(busy, t)
		if jt.elem = compileJSON(t.Elem(), busy); jt.elem == nil {
			return nil
		}
		return jt
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // []byte is base64
			return nil
		}
		busy[t] = true
		defer delete(busy, t)
		if jt.elem = compileJSON(t.Elem(), busy); jt.elem == nil {
			return nil
		}
		return jt
	case reflect.Struct:
		busy[t] = true
		defer delete(busy, t)
		seen := map[string]bool{}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				return nil // embedding: encoding/json's promotion rules
			}
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if opts != "" && opts != "omitempty" {
				return nil // string, omitzero, or a combination
			}
			if name == "" {
				name = f.Name
			}
			if !plainName(name) || seen[name] {
				return nil
			}
			seen[name] = true
			ft := compileJSON(f.Type, busy)
			if ft == nil {
				return nil
			}
			jt.fields = append(jt.fields, jsonField{offset: f.Offset, key: `"` + name + `":`, omitEmpty: opts == "omitempty", typ: ft})
		}
		return jt
	}
	return nil // maps, interfaces, uint8 and uintptr, float32, complex, …
}

// plainName: a key written as is (letters, digits, '_').
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// appendJSON appends the value of jt's type at p as json.Marshal writes
// it; false when a value needs encoding/json (b is then partly written:
// the caller drops it).
func (jt *jsonType) appendJSON(b []byte, p unsafe.Pointer) ([]byte, bool) {
	switch jt.kind {
	case reflect.Bool:
		return strconv.AppendBool(b, *(*bool)(p)), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, jt.int(p), 10), true
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, jt.uint(p), 10), true
	case reflect.Float64:
		return appendJSONFloat(b, *(*float64)(p))
	case reflect.String:
		return appendJSONString(b, *(*string)(p))
	case reflect.Pointer:
		e := *(*unsafe.Pointer)(p)
		if e == nil {
			return append(b, "null"...), true
		}
		return jt.elem.appendJSON(b, e)
	case reflect.Slice:
		h := (*[]byte)(p) // any slice's header: data, len, cap
		if unsafe.SliceData(*h) == nil {
			return append(b, "null"...), true
		}
		return jt.appendList(b, unsafe.Pointer(unsafe.SliceData(*h)), len(*h))
	case reflect.Array:
		return jt.appendList(b, p, jt.n)
	case reflect.Struct:
		b = append(b, '{')
		first := true
		for i := range jt.fields {
			f := &jt.fields[i]
			fp := unsafe.Add(p, f.offset)
			if f.omitEmpty && f.typ.empty(fp) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.key...)
			var ok bool
			if b, ok = f.typ.appendJSON(b, fp); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendList writes n elements of jt.elem from p on.
func (jt *jsonType) appendList(b []byte, p unsafe.Pointer, n int) ([]byte, bool) {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = jt.elem.appendJSON(b, unsafe.Add(p, uintptr(i)*jt.elem.size)); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func (jt *jsonType) int(p unsafe.Pointer) int64 {
	switch jt.kind {
	case reflect.Int8:
		return int64(*(*int8)(p))
	case reflect.Int16:
		return int64(*(*int16)(p))
	case reflect.Int32:
		return int64(*(*int32)(p))
	case reflect.Int64:
		return *(*int64)(p)
	}
	return int64(*(*int)(p))
}

func (jt *jsonType) uint(p unsafe.Pointer) uint64 {
	switch jt.kind {
	case reflect.Uint16:
		return uint64(*(*uint16)(p))
	case reflect.Uint32:
		return uint64(*(*uint32)(p))
	case reflect.Uint64:
		return *(*uint64)(p)
	}
	return uint64(*(*uint)(p))
}

// empty is encoding/json's omitempty test for the kinds compiled.
func (jt *jsonType) empty(p unsafe.Pointer) bool {
	switch jt.kind {
	case reflect.Slice:
		return len(*(*[]byte)(p)) == 0
	case reflect.String:
		return len(*(*string)(p)) == 0
	case reflect.Array:
		return jt.n == 0
	case reflect.Bool:
		return !*(*bool)(p)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jt.int(p) == 0
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return jt.uint(p) == 0
	case reflect.Float64:
		return *(*float64)(p) == 0
	case reflect.Pointer:
		return *(*unsafe.Pointer)(p) == nil
	}
	return false
}

// appendJSONFloat writes a float64 as encoding/json does: the shortest
// decimal that reads back exactly, in %f form unless its magnitude is
// below 1e-6 or at least 1e21 (then %e with the exponent unpadded, ES6's
// number-to-string rule, as encoding/json documents). NaN and infinities
// decline (json.Marshal's error).
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 → e-7
		b = b[:n-1]
	}
	return b, true
}

// appendJSONString writes s quoted when no byte needs an escape in
// encoding/json's output (printable ASCII other than '"', '\\' and its
// HTML escapes '<', '>', '&'); it declines otherwise.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// same reports whether the values of jt's type at p and q are written the
// same: every field the encoder reads is equal (floats bit for bit, so
// that 0 and -0 differ; a nil list differs from an empty one). When it is
// true, appendJSON writes the same bytes for both, or declines for both.
func (jt *jsonType) same(p, q unsafe.Pointer) bool {
	if p == q {
		return true
	}
	switch jt.kind {
	case reflect.Bool:
		return *(*bool)(p) == *(*bool)(q)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jt.int(p) == jt.int(q)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return jt.uint(p) == jt.uint(q)
	case reflect.Float64:
		return math.Float64bits(*(*float64)(p)) == math.Float64bits(*(*float64)(q))
	case reflect.String:
		return *(*string)(p) == *(*string)(q)
	case reflect.Pointer:
		e, f := *(*unsafe.Pointer)(p), *(*unsafe.Pointer)(q)
		if e == nil || f == nil {
			return e == f
		}
		return jt.elem.same(e, f)
	case reflect.Slice:
		g, h := *(*[]byte)(p), *(*[]byte)(q) // any slice's header: data, len, cap
		if unsafe.SliceData(g) == nil || unsafe.SliceData(h) == nil {
			return unsafe.SliceData(g) == unsafe.SliceData(h)
		}
		return len(g) == len(h) && jt.sameList(unsafe.Pointer(unsafe.SliceData(g)), unsafe.Pointer(unsafe.SliceData(h)), len(g))
	case reflect.Array:
		return jt.sameList(p, q, jt.n)
	case reflect.Struct:
		for i := range jt.fields {
			f := &jt.fields[i]
			if !f.typ.same(unsafe.Add(p, f.offset), unsafe.Add(q, f.offset)) {
				return false
			}
		}
		return true
	}
	return false
}

// sameList reports whether n elements of jt.elem from p and q on are the same.
func (jt *jsonType) sameList(p, q unsafe.Pointer, n int) bool {
	for i := range n {
		off := uintptr(i) * jt.elem.size
		if !jt.elem.same(unsafe.Add(p, off), unsafe.Add(q, off)) {
			return false
		}
	}
	return true
}
