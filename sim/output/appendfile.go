package output

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// AppendFile is an Arrow IPC table that grows by flushes and survives being
// killed at any moment: Add buffers rows, and Flush rewrites the whole file
// (every row added so far, in cmp order, in record batches of at most
// BatchRows rows) to a temporary file that is synced and renamed over the
// old one. The file on disk is therefore always a complete, readable table
// holding every row up to the last finished Flush; a kill -9 loses only the
// rows added since. Rewriting costs O(rows) per flush and buys dictionaries
// that are fixed for the whole file, as the IPC file format requires (see
// [WriteTable]); a [FlushSchedule] that lets the file double between
// rewrites keeps the total O(final rows).
//
// One process at a time may own a path. AppendFile is not safe for
// concurrent use.
type AppendFile[T any] struct {
	// BatchRows is the size of the file's record batches (default
	// [BatchRows]); a sweep sets it to its flush size, so each batch of
	// points is one record batch.
	BatchRows int

	path    string
	meta    map[string]string
	cmp     func(a, b *T) int
	rows    []T
	pending int
	// room is the array Grow made while the rows are in it (nil without
	// one, or once they moved on), mapped the bytes of it whose pages are
	// mapped (mapAhead).
	room    *T
	mapped  int
	flushes int
	// sorted is how many leading rows are in cmp order: all of them after
	// a sort, none of the rows a resumed file was read with.
	sorted int
	// sort's index arrays, kept between flushes
	order, from []int32
	// The rewrites' table builder and buffered writer, kept between
	// flushes (tableBuilder.refresh, createAtomicIPCWith).
	tb *tableBuilder
	w  *bufio.Writer
	// frame is the header and footer the rewrites keep while the
	// dictionaries do (frame.go); nil when the next rewrite goes through
	// arrow-go's FileWriter, whose bytes capture then receives.
	frame   *ipcFrame
	capture []byte
	// enc is the frames' record batch encoder, kept from frame to frame
	// (batchenc.go); nil until a frame is made.
	enc *batchEncoder
	// fullWrites counts the rewrites through arrow-go's FileWriter, probes
	// the frames made from a file of the first batch alone, reframes those
	// made from the last frame after a dictionary grew (ipcFrame.reframe),
	// captured the bytes capture received (tests).
	fullWrites, probes, reframes, captured int
}

// appendBufferSize is the buffer an AppendFile's rewrites stream through:
// a 1,000-row sweep summary (≈ 0.9 MB) goes out in 15 writes from 16
// pages that stay in the cache, instead of one write from up to 230
// pages.
const appendBufferSize = 64 << 10

// OpenAppendFile prepares path for appending rows of type T (a struct with
// arrow tags). With keep, the rows already in the file are loaded and kept
// (a resumed sweep); without it an existing file is replaced by the first
// Flush. Temporary files that a killed writer left next to path are
// removed. Nothing is written until Flush.
func OpenAppendFile[T any](path string, meta map[string]string, keep bool, cmp func(a, b *T) int) (*AppendFile[T], error) {
	var zero []T
	if _, err := specOfRows(zero); err != nil {
		return nil, err
	}
	a := &AppendFile[T]{BatchRows: BatchRows, path: path, meta: meta, cmp: cmp}
	if err := removeStaleTemps(path); err != nil {
		return nil, err
	}
	if keep {
		if _, err := os.Stat(path); err == nil {
			if _, err := ReadTable(path, &a.rows); err != nil {
				return nil, err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("output: %w", err)
		}
	}
	return a, nil
}

func specOfRows(rows any) (*structSpec, error) {
	v, err := rowsValue(rows)
	if err != nil {
		return nil, err
	}
	return specOf(v.Type().Elem())
}

// removeStaleTemps deletes PATH.tmp-* files (left by a writer that was
// killed between creating its temporary file and renaming it).
func removeStaleTemps(path string) error {
	matches, err := filepath.Glob(globEscape(path) + ".tmp-*")
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	for _, m := range matches {
		if err := os.Remove(m); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("output: remove stale temporary file: %w", err)
		}
	}
	return nil
}

// globEscape quotes the glob metacharacters of a literal path.
func globEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(p)
}

// Add buffers rows; they reach the file at the next Flush.
func (a *AppendFile[T]) Add(rows ...T) {
	if a.room != nil {
		if len(rows) <= cap(a.rows)-len(a.rows) {
			a.mapAhead(len(a.rows) + len(rows))
		} else {
			a.room = nil // the rows move to a new array
		}
	}
	a.rows = append(a.rows, rows...)
	a.pending += len(rows)
}

// mapAhead populates the room Grow made ahead of the rows, so that before
// the first n rows are written there every whole page of the array below
// the n-th row's end plus half a step is mapped (the page a step ends
// inside is the next step's first: hugepages.PopulateUpTo). The rows are
// in Grow's array (a.room), and n is at most its capacity.
func (a *AppendFile[T]) mapAhead(n int) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	lo, hi := aheadRange(a.mapped, n*size, cap(a.rows)*size, mapStep)
	if hi > lo {
		b := unsafe.Slice((*byte)(unsafe.Pointer(a.room)), cap(a.rows)*size)
		a.mapped = lo + hugepages.PopulateUpTo(b[lo:hi])
		if hi == len(b) || a.mapped < min(n*size+mapStep/2, len(b)) {
			// the array's last step, or the kernel populates nothing: what
			// is left faults as it is written, and no later Add asks again
			a.mapped = len(b)
		}
	}
}

// aheadRange is the byte range of an array of capBytes bytes that mapAhead
// populates when rows up to byte need are about to be written and the
// pages below byte mapped are: none while mapped is at least half a step
// past need (or at the array's end); else from mapped through a step past
// need, within the array.
func aheadRange(mapped, need, capBytes, step int) (lo, hi int) {
	if mapped >= min(need+step/2, capBytes) {
		return mapped, mapped
	}
	return mapped, min(need+step, capBytes)
}

// mapStep is how far ahead of the rows Add maps Grow's room: up to 64
// KiB, ≈ 50 of a sweep's 1.2 KB summary rows, once fewer than half of it
// are left, so a 1,000-point sweep's rows are mapped in ≈ 40 calls as its
// points finish.
const mapStep = 64 << 10

// Grow makes room for n more rows, so that the next n rows Add buffers land
// in one array: the rows held are copied once, into an array whose pages
// are first written as rows arrive. Without it a sweep's rows (≈ 1.2 KB
// each) grew by doubling, each growth copying every row so far to fresh
// pages that the collector, which seldom runs while a sweep's workers hold
// their reserved storage, did not hand back: ≈ 580 of the 1,000-point 70B
// sweep's page faults (docs/design.md "Speed", foot36). Rows and the file
// are unchanged.
//
// The room's pages are mapped ahead of the rows, mapStep bytes at a time
// (hugepages.PopulateUpTo, by Add: mapAhead), not here: a sweep grows its
// summary before its first point runs, when nothing else runs beside it,
// and its rows arrive beside the workers, so mapping the 70B sweep's 305
// pages at once (reserve45, when a collection scanned the room before the
// rows arrived and faulted its untouched pages in as the zero page) held
// up its first point by them (docs/design.md "Speed", serial53). A
// collection that scans the room before its rows arrive still reads the
// pages not yet mapped as the zero page; the sweep's points run no
// collection (pointsGCPercent, cmd/simtrain).
func (a *AppendFile[T]) Grow(n int) {
	if n > 0 {
		a.rows = slices.Grow(a.rows, n)
		var zero T
		a.room, a.mapped = unsafe.SliceData(a.rows), len(a.rows)*int(unsafe.Sizeof(zero))
	}
}

// Rows is the number of rows held (on disk or pending).
func (a *AppendFile[T]) Rows() int { return len(a.rows) }

// Pending is the number of rows added since the last Flush.
func (a *AppendFile[T]) Pending() int { return a.pending }

// OnDisk is the number of rows in the file as the last Flush wrote it (or,
// before any Flush, as OpenAppendFile kept it).
func (a *AppendFile[T]) OnDisk() int { return len(a.rows) - a.pending }

// Due reports whether s says the file should be rewritten now, since is
// the time since the last Flush (or since the file was opened).
func (a *AppendFile[T]) Due(s FlushSchedule, since time.Duration) bool {
	return s.Due(a.OnDisk(), a.pending, since)
}

// FlushSchedule says when a growing file such as a sweep summary is
// rewritten. Each rewrite costs O(rows in the file), so rewriting every
// MinRows rows would cost O(rows²/MinRows) over a file's life; instead the
// rows waiting must also reach the rows already on disk, so the file at
// least doubles from one rewrite to the next, and the rewrites the count
// calls for write fewer than twice the final rows in all (MinRows,
// 2×MinRows, 4×MinRows, … below the final count), the final write as many
// again. Every bounds the wait when rows arrive slowly:
// once that long has passed since the last rewrite, any waiting row makes
// the file due. The caller writes once more at the end.
type FlushSchedule struct {
	// MinRows is the fewest waiting rows worth a rewrite (a sweep's
	// --batch); below 1 it counts as 1.
	MinRows int
	// Every is the longest a waiting row waits for a rewrite, checked when
	// rows are added (0: no time bound).
	Every time.Duration
}

// Due reports whether a file holding onDisk rows, with pending more rows
// waiting, is due a rewrite, since long after the last one: some row waits,
// and either the waiting rows reach both MinRows and onDisk, or since has
// reached Every.
func (s FlushSchedule) Due(onDisk, pending int, since time.Duration) bool {
	if pending <= 0 {
		return false
	}
	if pending >= max(s.MinRows, onDisk, 1) {
		return true
	}
	return s.Every > 0 && since >= s.Every
}

// Flush sorts every row with cmp (stable) and rewrites the file atomically.
// On error the previous file is left as it was and the rows stay pending.
func (a *AppendFile[T]) Flush() error {
	if a.pending == 0 && a.flushes > 0 {
		return nil
	}
	if a.cmp != nil {
		a.sort()
	}
	hugepages.AdviseHeap(a) // the heap's growth since the last advice on 2 MiB pages
	if err := a.write(); err != nil {
		return err
	}
	a.pending = 0
	a.flushes++
	return nil
}

// write rewrites the file with every row, in record batches of BatchRows,
// as writeTableBatches writes them (TestAppendFileRewritesEqualWriteTable),
// through the builder and writer kept from the last rewrite. While the
// dictionaries do not change, the header and the footer's schema come
// from the first rewrite and only the batches are encoded (frame.go);
// once they changed (the builder kept, redict), from the last frame with
// the new dictionary messages (reframe), or where that cannot be, from a
// file of the first batch alone written to memory (probe), when the file
// holds more than one batch.
func (a *AppendFile[T]) write() error {
	n, batch := len(a.rows), max(1, a.BatchRows)
	old := a.frame // its storage for the next frame
	switch {
	case a.tb != nil && a.tb.refresh(a.rows):
	case a.tb != nil && a.tb.redict(a.rows):
		// a dictionary changed: the frame is made again (reframe, probe)
		a.frame = nil
	default:
		tb, err := newTableBuilder(memory.DefaultAllocator, a.rows, withChecksumKey(a.meta))
		if err != nil {
			return err
		}
		if a.tb != nil {
			a.tb.release()
			tb.adopt(a.tb)
		}
		a.tb = tb
		a.frame = nil
	}
	if a.w == nil {
		a.w = bufio.NewWriterSize(nil, appendBufferSize)
	}
	if a.frame == nil && old != nil {
		if a.frame = old.reframe(a.tb); a.frame != nil {
			a.reframes++
		}
	}
	if a.frame == nil && n > batch {
		a.frame = a.probe(batch, old)
	}
	if fr := a.frame; fr != nil && n > 0 {
		create := func(path string) (*atomicFile, error) { return createAtomicIPCWith(path, a.w, fr.seal) }
		return writeAtomicWith(create, a.path, func(bw *bufio.Writer) error {
			w := fr.start(bw)
			err := fr.writeBatches(w, a.tb, memory.DefaultAllocator, n, batch)
			if err == nil {
				err = fr.finish(w)
			}
			if err != nil {
				return fmt.Errorf("output: write %s: %w", a.path, err)
			}
			return nil
		})
	}
	a.frame = nil
	create := func(path string) (*atomicFile, error) { return createAtomicIPCWith(path, a.w, sealChecksum) }
	var tee *[]byte
	if n > 0 {
		if a.capture == nil {
			// a sweep summary's first rewrite (64 rows) is ≈ 60 KB: one
			// array, not one grown by doubling through fresh pages
			a.capture = make([]byte, 0, appendBufferSize)
		}
		a.capture = a.capture[:0]
		tee = &a.capture
	}
	if err := writeBatchesWith(create, memory.DefaultAllocator, a.path, a.tb.schema, a.tb.n, batch, a.tb.batch, tee); err != nil {
		return err
	}
	a.fullWrites++
	a.captured += len(a.capture)
	if n > 0 {
		a.frame = newIPCFrame(a.capture, (cap(a.rows)+batch-1)/batch, old)
		a.frame.adoptEncoder(a.capture, a.tb, min(batch, n), a.encoder())
		a.frame.adoptDicts(a.tb, a.encoder())
		// The capture is the first rewrite's file (one batch of a sweep's
		// summary); a larger one, of a resumed file, is not kept.
		if cap(a.capture) > 1<<20 {
			a.capture = nil
		}
	}
	return nil
}

// probe returns the frame of the file arrow-go's FileWriter writes for the
// first batch rows alone, written to memory (the capture), not to the
// file; nil when no frame can be made of it (write then writes the whole
// file through FileWriter). Its header (the schema and the dictionaries,
// fixed for the whole file), end marker and footer schema are the whole
// file's: FileWriter writes the dictionaries once, before the first batch,
// and the schema alone makes the footer's schema part; so the framed
// rewrite is the file FileWriter would write
// (TestAppendFileRewritesEqualWriteTable, rewrites after a dictionary
// grew).
//
// Why: when a dictionary column gained a value after the first rewrite
// (a sweep's point whose GPU or other dictionary value comes late in the
// order the points run), the rewrite went through FileWriter with the
// whole file captured, to make the next frame of: the 1,000-point 70B
// sweep's last rewrite, dealt with its largest points first, captured
// 958 KB through fresh pages (≈ 600 page faults, docs/design.md, pool47);
// the first batch alone is ≈ 60 KB, in the capture's kept array.
func (a *AppendFile[T]) probe(batch int, old *ipcFrame) *ipcFrame {
	if a.capture == nil {
		a.capture = make([]byte, 0, appendBufferSize)
	}
	a.capture = a.capture[:0]
	if err := writeIPC(appendBytes{&a.capture}, memory.DefaultAllocator, a.tb.schema, batch, batch, a.tb.batch); err != nil {
		return nil
	}
	a.probes++
	a.captured += len(a.capture)
	fr := newIPCFrame(a.capture, (cap(a.rows)+batch-1)/batch, old)
	fr.adoptEncoder(a.capture, a.tb, batch, a.encoder())
	fr.adoptDicts(a.tb, a.encoder())
	return fr
}

// encoder returns the frames' record batch encoder, made at the first
// call.
func (a *AppendFile[T]) encoder() *batchEncoder {
	if a.enc == nil {
		a.enc = newBatchEncoder()
	}
	return a.enc
}

// sort puts a.rows in cmp order, stable: equal rows keep the order they
// have in a.rows, exactly as slices.SortStableFunc over all of them would
// (TestAppendFileSortEqualsStableSort). The rows a previous sort ordered
// (a.sorted) stay in order and the rows added since are sorted by index and
// merged into them; the merged order is then applied in place, cycle by
// cycle, so each row moves once and nothing row-sized is allocated. The
// stable sort moved the ≈ 1.2 KB summary rows O(log² n) times in its
// rotations: 2.2 ms against 0.3 ms for the final rewrite of the 1,000-point
// 70B sweep (512 rows sorted, 488 new), which nothing overlaps.
func (a *AppendFile[T]) sort() {
	n0, n := a.sorted, len(a.rows)
	if n0 >= n {
		return
	}
	rows := a.rows
	// The new rows' order, by index (ties keep their adding order).
	order := a.order[:0]
	for i := n0; i < n; i++ {
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(x, y int32) int { return a.cmp(&rows[x], &rows[y]) })
	// from[k] is the index of the row that goes to place k. On a tie the
	// earlier-sorted row goes first: it stands before every new row.
	from := a.from[:0]
	i, j := 0, 0
	for i < n0 && j < len(order) {
		if a.cmp(&rows[order[j]], &rows[i]) < 0 {
			from = append(from, order[j])
			j++
		} else {
			from = append(from, int32(i))
			i++
		}
	}
	for ; i < n0; i++ {
		from = append(from, int32(i))
	}
	from = append(from, order[j:]...)
	a.order, a.from = order, from
	// Each cycle of the permutation: the first place's row is held aside,
	// every other row moves once, and a placed row is marked -1.
	for k := range from {
		if from[k] < 0 {
			continue
		}
		if int(from[k]) == k {
			from[k] = -1
			continue
		}
		held := rows[k]
		dst := k
		for {
			src := int(from[dst])
			from[dst] = -1
			if src == k {
				rows[dst] = held
				break
			}
			rows[dst] = rows[src]
			dst = src
		}
	}
	a.sorted = n
}

// Path is the file's path.
func (a *AppendFile[T]) Path() string { return a.path }
