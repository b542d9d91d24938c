package parquet

import (
	"fmt"
	"strings"
)

// Type is a Parquet physical type (parquet.thrift enum Type).
type Type int32

// The physical types; only those up to ByteArray are read or written.
const (
	Boolean   Type = 0
	Int32     Type = 1
	Int64     Type = 2
	Int96     Type = 3
	Float     Type = 4
	Double    Type = 5
	ByteArray Type = 6
	FixedLen  Type = 7
)

var typeNames = []string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}

func (t Type) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type %d", int32(t))
}

// Column describes one leaf column. A writer's columns are all top-level;
// a read file's columns are the leaves of its schema, named by their
// dotted path.
type Column struct {
	Name     string
	Type     Type
	Optional bool // may hold nulls (repetition OPTIONAL)
	String   bool // BYTE_ARRAY holding UTF-8 text (logical type STRING)
	// IntBits is the width of the INTEGER logical type (8, 16, 32, 64;
	// 0 for none), Unsigned its signedness.
	IntBits  int8
	Unsigned bool

	// Set by the reader: the column's maximum definition and repetition
	// levels (0 and 0 for a required top-level column, 1 and 0 for an
	// optional one).
	MaxDef, MaxRep int
}

// TypeName names the column's physical and logical type for messages,
// e.g. "INT64 (Int(bitWidth=64, isSigned=true))", "BYTE_ARRAY (String)".
func (c Column) TypeName() string {
	s := c.Type.String()
	switch {
	case c.String:
		s += " (String)"
	case c.IntBits > 0:
		s += fmt.Sprintf(" (Int(bitWidth=%d, isSigned=%t))", c.IntBits, !c.Unsigned)
	}
	if c.MaxRep > 0 {
		s = "repeated " + s
	}
	return s
}

// KeyValue is one entry of the file's key-value metadata.
type KeyValue struct{ Key, Value string }

// Encodings, codecs and page types of parquet.thrift.
const (
	encPlain          = 0
	encPlainDict      = 2
	encRLE            = 3
	encBitPacked      = 4
	encDeltaBinary    = 5
	encDeltaLength    = 6
	encDeltaByteArray = 7
	encRLEDict        = 8
	encByteStream     = 9

	codecNone   = 0
	codecSnappy = 1
	codecGzip   = 2
	codecLZO    = 3
	codecBrotli = 4
	codecLZ4    = 5
	codecZstd   = 6
	codecLZ4Raw = 7

	pageData   = 0
	pageIndex  = 1
	pageDict   = 2
	pageDataV2 = 3
)

func encodingName(e int32) string {
	names := map[int32]string{encPlain: "PLAIN", encPlainDict: "PLAIN_DICTIONARY", encRLE: "RLE", encBitPacked: "BIT_PACKED",
		encDeltaBinary: "DELTA_BINARY_PACKED", encDeltaLength: "DELTA_LENGTH_BYTE_ARRAY", encDeltaByteArray: "DELTA_BYTE_ARRAY",
		encRLEDict: "RLE_DICTIONARY", encByteStream: "BYTE_STREAM_SPLIT"}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("encoding %d", e)
}

func codecName(c int32) string {
	names := []string{"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"}
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("codec %d", c)
}

// Converted types (parquet.thrift enum ConvertedType) written next to the
// logical types for readers that predate them.
const (
	convUTF8   = 0
	convUint8  = 11
	convUint16 = 12
	convUint32 = 13
	convUint64 = 14
	convInt8   = 15
	convInt16  = 16
	convInt32  = 17
	convInt64  = 18
)

// chunkMeta is what the reader keeps of a ColumnMetaData.
type chunkMeta struct {
	typ        Type
	codec      int32
	numValues  int64
	compressed int64
	dataOff    int64
	dictOff    int64 // 0 without a dictionary page
}

// rowGroup is what the reader keeps of a RowGroup.
type rowGroup struct {
	rows   int64
	chunks []chunkMeta
}

// schemaElement is one node of the flattened schema tree.
type schemaElement struct {
	typ         Type
	hasType     bool
	repetition  int32 // 0 required, 1 optional, 2 repeated
	name        string
	numChildren int32
	converted   int32 // -1 when absent
	logical     int16 // LogicalType union member, 0 when absent
	intBits     int8
	intSigned   bool
}

// encodeSchemaElement writes one SchemaElement: the root (a group of n
// children) when col is nil.
func (e *encoder) schemaElement(col *Column, n int) {
	e.beginStruct()
	if col == nil {
		e.str(4, "schema")
		e.i32(5, int32(n))
		e.endStruct()
		return
	}
	e.i32(1, int32(col.Type))
	rep := int32(0)
	if col.Optional {
		rep = 1
	}
	e.i32(3, rep)
	e.str(4, col.Name)
	switch {
	case col.String:
		e.i32(6, convUTF8)
		e.structField(10)
		e.structField(1) // STRING: an empty struct
		e.endStruct()
		e.endStruct()
	case col.IntBits > 0:
		conv := map[int8]int32{8: convInt8, 16: convInt16, 32: convInt32, 64: convInt64}[col.IntBits]
		if col.Unsigned {
			conv = map[int8]int32{8: convUint8, 16: convUint16, 32: convUint32, 64: convUint64}[col.IntBits]
		}
		e.i32(6, conv)
		e.structField(10)
		e.structField(10) // INTEGER
		e.byte8(1, col.IntBits)
		e.boolean(2, !col.Unsigned)
		e.endStruct()
		e.endStruct()
	}
	e.endStruct()
}

// readSchemaElement reads one SchemaElement.
func (d *decoder) readSchemaElement() schemaElement {
	s := schemaElement{converted: -1}
	d.readStruct(func(id int16, typ byte) bool {
		switch {
		case id == 1 && typ == tI32:
			s.typ, s.hasType = Type(d.i32()), true
		case id == 3 && typ == tI32:
			s.repetition = d.i32()
		case id == 4 && typ == tBinary:
			s.name = string(d.binary())
		case id == 5 && typ == tI32:
			s.numChildren = d.i32()
		case id == 6 && typ == tI32:
			s.converted = d.i32()
		case id == 10 && typ == tStruct:
			d.readStruct(func(member int16, typ byte) bool {
				if typ != tStruct {
					return false
				}
				s.logical = member
				d.readStruct(func(id int16, typ byte) bool {
					if member != 10 {
						return false
					}
					switch {
					case id == 1 && typ == tByte:
						s.intBits = int8(d.byte1())
					case id == 2 && (typ == tBoolTrue || typ == tBoolFalse):
						s.intSigned = boolValue(typ)
					default:
						return false
					}
					return true
				})
				return true
			})
		default:
			return false
		}
		return true
	})
	return s
}

// leafColumn is the Column of a leaf schema element at the given path and
// levels.
func leafColumn(s schemaElement, path []string, maxDef, maxRep int) Column {
	c := Column{Name: strings.Join(path, "."), Type: s.typ, Optional: s.repetition == 1, MaxDef: maxDef, MaxRep: maxRep}
	switch {
	case s.logical == 1 || s.logical == 0 && s.converted == convUTF8:
		c.String = s.typ == ByteArray
	case s.logical == 10:
		c.IntBits, c.Unsigned = s.intBits, !s.intSigned
	case s.logical == 0 && s.converted >= convUint8 && s.converted <= convInt64:
		bits := []int8{8, 16, 32, 64}
		c.IntBits, c.Unsigned = bits[(s.converted-convUint8)%4], s.converted <= convUint64
	}
	return c
}
