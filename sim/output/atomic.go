package output

import (
	"bufio"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// tmpSeq makes temporary names unique within one process, so two writers of
// the same path never share a temporary file.
var tmpSeq atomic.Uint64

// testHookBeforeRename, when set by a test, runs after the temporary file is
// complete and synced and before the rename; an error it returns fails the
// write as an I/O error would.
var testHookBeforeRename func(tmp string) error

// atomicFile is a file written under a temporary name and renamed over its
// final path by commit. Exactly one of commit or abort takes effect; after
// either, both are no-ops (commit then returns the first error again).
type atomicFile struct {
	path, tmp string
	f         *os.File
	w         *bufio.Writer
	sum       hash.Hash // the file's checksum (integrity.go); nil for files without one
	seal      func(f *os.File, size int64, sum hash.Hash) error
	done      bool
	err       error
	// pooled says w came from newBuffered's pool (and goes back to it).
	pooled bool
}

// createAtomic opens PATH.tmp-PID-N for writing in PATH's directory.
func createAtomic(path string) (*atomicFile, error) {
	a, err := openAtomic(path)
	if err != nil {
		return nil, err
	}
	a.w, a.pooled = newBuffered(a.f), true
	return a, nil
}

// buffers holds the 1 MiB writers of files that writeAtomicWith finished.
// A new writer's buffer is mapped at once (hugepages.Populate over
// AvailableBuffer, the whole empty buffer): a file of 1 MiB or more
// (the 405B run's memory.arrow, timeline.arrow, links.arrow) writes every
// page of it, ≈ 250 faults a buffer otherwise (issue 18, docs/design.md
// "Speed", run46).
var buffers = sync.Pool{New: func() any {
	b := bufio.NewWriterSize(nil, 1<<20)
	hugepages.Populate(b.AvailableBuffer()[:b.Available()])
	return b
}}

// newBuffered is a writer to w with a 1 MiB buffer, a pooled one when
// there is one. Why pooled: a sweep rewrites its summary file at every
// flush (≈ 0.06, 0.12, 0.24, 0.47 and 0.94 MB for the 1,000-point 70B
// sweep), and a new buffer a file is fresh pages written up to the file's
// size, which the collector, seldom running while a sweep's workers hold
// their reserved storage, does not hand back (docs/design.md "Speed",
// foot36). The bytes written are the same either way.
func newBuffered(w io.Writer) *bufio.Writer {
	b := buffers.Get().(*bufio.Writer)
	b.Reset(w)
	return b
}

// release hands a finished file's writer back to newBuffered's pool. The
// file must be committed or aborted, and nothing may use its writer again:
// writeAtomicWith's fn, which alone was handed it, has returned.
// A writer of the caller's own (createAtomicIPCWith) is only detached from
// the file, for the caller to use again.
func (a *atomicFile) release() {
	if a.w != nil && a.done {
		a.w.Reset(nil)
		if a.pooled {
			buffers.Put(a.w)
		}
		a.w = nil
	}
}

// openAtomic opens the temporary file, without a writer: the caller sets w
// (one 1 MiB buffer per file, allocated and cleared once).
func openAtomic(path string) (*atomicFile, error) {
	if path == "" {
		return nil, errors.New("output: empty file path")
	}
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 10)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output: create %s: %w", path, err)
	}
	return &atomicFile{path: path, tmp: tmp, f: f}, nil
}

// createAtomicIPC is createAtomic for an Arrow IPC file whose schema
// metadata holds the checksum placeholder: the bytes are hashed as they
// are written and commit writes the checksum (integrity.go).
func createAtomicIPC(path string) (*atomicFile, error) {
	return createAtomicSealed(path, sealChecksum)
}

// createAtomicParquet is createAtomicIPC for a Parquet file.
func createAtomicParquet(path string) (*atomicFile, error) {
	return createAtomicSealed(path, sealParquetChecksum)
}

func createAtomicSealed(path string, seal func(*os.File, int64, hash.Hash) error) (*atomicFile, error) {
	a, err := openAtomic(path)
	if err != nil {
		return nil, err
	}
	a.sum, a.seal = newChecksum(), seal
	a.w, a.pooled = newBuffered(&hashingWriter{f: a.f, h: a.sum}), true
	return a, nil
}

// createAtomicIPCWith is createAtomicIPC writing through w, a writer of
// the caller's that release hands back detached rather than to the pool.
// An AppendFile keeps one small writer for all its rewrites
// (appendBufferSize): it writes the same bytes as the pooled 1 MiB
// writers, whose pages, touched up to the size of the file, the kernel
// faulted in afresh whenever the pool handed out a new one.
//
// seal is sealChecksum, or that of an AppendFile's framed rewrite
// (ipcFrame.seal).
func createAtomicIPCWith(path string, w *bufio.Writer, seal func(*os.File, int64, hash.Hash) error) (*atomicFile, error) {
	a, err := openAtomic(path)
	if err != nil {
		return nil, err
	}
	a.sum, a.seal = newChecksum(), seal
	w.Reset(&hashingWriter{f: a.f, h: a.sum})
	a.w = w
	return a, nil
}

// hashingWriter writes every byte to f and to h, in order, as
// io.MultiWriter(f, h) does, but hashes a large write on a goroutine of
// its own while f writes it: the 1 MiB buffer a checksummed file flushes
// costs its SHA-256 (≈ 0.6 ms) and its write(2) (≈ 0.6 ms to the page
// cache) one after the other otherwise, and a sweep's final summary
// rewrite, ≈ 1 MB, runs while the other CPU idles. h has taken all of p
// when Write returns, so the digest is the same. After a failed write h
// may hold more than f (io.MultiWriter would not have hashed p): the
// caller aborts the file then, and its digest is never used.
type hashingWriter struct {
	f io.Writer
	h hash.Hash
}

// parallelHashMin is the smallest write hashed beside the file's write.
const parallelHashMin = 64 << 10

func (w *hashingWriter) Write(p []byte) (int, error) {
	if len(p) < parallelHashMin {
		n, err := w.f.Write(p)
		if err == nil {
			w.h.Write(p)
		}
		return n, err
	}
	done := make(chan struct{})
	go func() {
		w.h.Write(p)
		close(done)
	}()
	n, err := w.f.Write(p)
	<-done
	return n, err
}

// commit flushes, syncs and closes the temporary file, renames it to the
// final path and syncs the directory. On failure it removes the temporary.
func (a *atomicFile) commit() error {
	if a.done {
		return a.err
	}
	a.done = true
	err := a.w.Flush()
	if err == nil && a.sum != nil {
		var st os.FileInfo
		if st, err = a.f.Stat(); err == nil {
			err = a.seal(a.f, st.Size(), a.sum)
		}
	}
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && testHookBeforeRename != nil {
		err = testHookBeforeRename(a.tmp)
	}
	if err == nil {
		err = os.Rename(a.tmp, a.path)
	}
	if err != nil {
		os.Remove(a.tmp)
		a.err = fmt.Errorf("output: write %s: %w", a.path, err)
		return a.err
	}
	syncDir(filepath.Dir(a.path))
	return nil
}

// abort closes and removes the temporary file; the final path is untouched.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.done = true
	a.err = errors.New("output: write " + a.path + ": aborted")
	a.f.Close()
	os.Remove(a.tmp)
}

// syncDir makes a rename durable. Errors are ignored: some file systems do
// not support syncing a directory, and the rename itself already succeeded.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// writeAtomic writes a whole file through fn and commits it, or leaves no
// trace of it if fn or the commit fails.
func writeAtomic(path string, fn func(w *bufio.Writer) error) error {
	return writeAtomicWith(createAtomic, path, fn)
}

func writeAtomicWith(create func(string) (*atomicFile, error), path string, fn func(w *bufio.Writer) error) error {
	a, err := create(path)
	if err != nil {
		return err
	}
	if err := fn(a.w); err != nil {
		a.abort()
		a.release()
		return err
	}
	err = a.commit()
	a.release()
	return err
}
