package parquet

import (
	"encoding/binary"
	"math"
)

// The encodings of Parquet format 2 pages (Encodings.md), which DuckDB,
// parquet-mr and polars write for data page v2: DELTA_BINARY_PACKED for
// integers, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY for strings,
// BYTE_STREAM_SPLIT for floating point.

// decodeDelta decodes n DELTA_BINARY_PACKED values from b into out
// (appending) and returns the bytes it read. Arithmetic wraps, as the spec
// requires; INT32 columns take the low 32 bits.
func decodeDelta(b []byte, n int, out []int64) ([]int64, int, error) {
	pos := 0
	uv := func() uint64 {
		if pos < 0 {
			return 0
		}
		v, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			pos = -1
			return 0
		}
		pos += k
		return v
	}
	zz := func(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }
	blockSize, miniblocks, total := uv(), uv(), uint64(0)
	if pos > 0 {
		total = uv()
	}
	var first uint64
	if pos > 0 {
		first = uv()
	}
	if pos < 0 {
		return out, 0, formatErr("DELTA_BINARY_PACKED header cut off")
	}
	if blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<16 || miniblocks == 0 || blockSize%miniblocks != 0 || (blockSize/miniblocks)%32 != 0 {
		return out, 0, formatErr("DELTA_BINARY_PACKED block of %d values in %d miniblocks", blockSize, miniblocks)
	}
	// The header counts the values encoded; it must be the page's count,
	// or a damaged count would spin through empty (bit width 0) miniblocks.
	if total != uint64(n) {
		return out, 0, formatErr("DELTA_BINARY_PACKED holds %d values, the page %d", total, n)
	}
	if n == 0 {
		return out, pos, nil
	}
	per := int(blockSize / miniblocks)
	v := uint64(zz(first))
	out = append(out, int64(v))
	left := int(total) - 1 // values still encoded (all must be skipped past)
	got := 1
	for left > 0 {
		minDelta := uint64(zz(uv()))
		if pos < 0 || int(miniblocks) > len(b)-pos {
			return out, 0, formatErr("DELTA_BINARY_PACKED block cut off")
		}
		widths := b[pos : pos+int(miniblocks)]
		pos += int(miniblocks)
		for m := 0; m < int(miniblocks) && left > 0; m++ {
			w := int(widths[m])
			if w > 64 {
				return out, 0, formatErr("DELTA_BINARY_PACKED bit width %d", w)
			}
			size := per * w / 8
			if size > len(b)-pos {
				return out, 0, formatErr("DELTA_BINARY_PACKED miniblock cut off")
			}
			mb := b[pos : pos+size]
			pos += size
			for k := 0; k < per && left > 0; k++ {
				d := unpack64(mb, k, w)
				v += minDelta + d
				if got < n {
					out = append(out, int64(v))
					got++
				}
				left--
			}
		}
	}
	return out, pos, nil
}

// unpack64 is value k of bit width w (≤ 64) packed least significant bit
// first in b.
func unpack64(b []byte, k, w int) uint64 {
	if w == 0 {
		return 0
	}
	bit := k * w
	var v uint64
	shift := 0
	for got := 0; got < w; {
		byteIdx, off := (bit+got)/8, (bit+got)%8
		take := min(8-off, w-got)
		v |= uint64(b[byteIdx]>>off&(1<<take-1)) << shift
		shift += take
		got += take
	}
	return v
}

// decodeDeltaLength decodes n DELTA_LENGTH_BYTE_ARRAY values.
func decodeDeltaLength(b []byte, n int, out [][]byte) ([][]byte, int, error) {
	lens, pos, err := decodeDelta(b, n, make([]int64, 0, n))
	if err != nil {
		return out, 0, err
	}
	for _, l := range lens {
		if l < 0 || l > int64(len(b)-pos) {
			return out, 0, formatErr("byte array of %d bytes runs past its page", l)
		}
		out = append(out, b[pos:pos+int(l):pos+int(l)])
		pos += int(l)
	}
	return out, pos, nil
}

// decodeDeltaByteArray decodes n DELTA_BYTE_ARRAY values: prefix lengths
// (shared with the previous value), then the suffixes.
func decodeDeltaByteArray(b []byte, n int, out [][]byte) ([][]byte, error) {
	prefixes, pos, err := decodeDelta(b, n, make([]int64, 0, n))
	if err != nil {
		return out, err
	}
	suffixes, _, err := decodeDeltaLength(b[pos:], n, make([][]byte, 0, n))
	if err != nil {
		return out, err
	}
	var prev []byte
	for i, p := range prefixes {
		if p < 0 || p > int64(len(prev)) {
			return out, formatErr("prefix of %d bytes on a value of %d", p, len(prev))
		}
		v := make([]byte, 0, int(p)+len(suffixes[i]))
		v = append(append(v, prev[:p]...), suffixes[i]...)
		out = append(out, v)
		prev = v
	}
	return out, nil
}

// decodeByteStreamSplit appends n BYTE_STREAM_SPLIT values of type t:
// byte k of value i is b[k*n+i].
func decodeByteStreamSplit(t Type, b []byte, n int, out Chunk) (Chunk, error) {
	width := map[Type]int{Int32: 4, Int64: 8, Float: 4, Double: 8}[t]
	if width == 0 {
		return out, formatErr("BYTE_STREAM_SPLIT in a %s column", t)
	}
	if n > len(b)/width {
		return out, formatErr("%d %s values in %d bytes", n, t, len(b))
	}
	total := len(b) / width // the page's value count, nulls excluded
	for i := 0; i < n; i++ {
		var u uint64
		for k := 0; k < width; k++ {
			u |= uint64(b[k*total+i]) << (8 * k)
		}
		switch t {
		case Int32:
			out.Int32 = append(out.Int32, int32(u))
		case Int64:
			out.Int64 = append(out.Int64, int64(u))
		case Float:
			out.Float = append(out.Float, math.Float32frombits(uint32(u)))
		case Double:
			out.Double = append(out.Double, math.Float64frombits(u))
		}
	}
	return out, nil
}
