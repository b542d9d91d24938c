package output

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
)

// Integrity of the Arrow files simtrain writes (results/README.md,
// "Checksums").
//
// Every Arrow IPC file carries, in its schema metadata, MetaChecksum: the
// SHA-256 of the file's bytes in which the checksum's own 64 hexadecimal
// digits are replaced by 64 ASCII '0's. The schema, and so the value, is
// stored twice in an IPC file (in the schema message after the leading
// magic, and in the footer); both copies are zeroed for the hash. So
// `data.replace(value, b"0"*64)` and one SHA-256 check a file in Python.
//
// Why in the metadata and not in a sidecar file: a file and its checksum
// are then renamed into place in one atomic step (a sweep rewrites its
// summary every batch; a sidecar would be out of step with it after a kill
// between two renames, which a resume would see as damage), and the
// checksum travels with every copy of the file. Readers that do not know
// the key ignore it (pyarrow, polars, DuckDB, apache-arrow in JavaScript).
//
// The writer hashes the bytes as they stream out with the value as 64 '0's
// and writes the digest over both copies before the file is synced and
// renamed; the reader walks the file's structure (ipccheck.go), then hashes
// it the same way. Every reader in this package checks both before
// handing the file to arrow-go.

// MetaChecksum is the schema metadata key of the file's checksum.
const MetaChecksum = "checksum_sha256"

const checksumHexLen = 2 * sha256.Size

// checksumPlaceholder is the value written while the file streams out.
var checksumPlaceholder = string(bytes.Repeat([]byte{'0'}, checksumHexLen))

// ErrDamaged is wrapped by every error about a file that is not as
// simtrain wrote it: a checksum that does not match, or a structure out of
// bounds (the CLI reports it as bad input, exit status 2).
var ErrDamaged = errors.New("damaged file")

// withChecksumKey returns meta with MetaChecksum set to the placeholder.
func withChecksumKey(meta map[string]string) map[string]string {
	m := make(map[string]string, len(meta)+1)
	for k, v := range meta {
		m[k] = v
	}
	m[MetaChecksum] = checksumPlaceholder
	return m
}

// newChecksum returns the hash the atomic writer streams the file through.
func newChecksum() hash.Hash { return sha256.New() }

// sealChecksum writes the digest of a complete IPC file, streamed through
// h, over both placeholders. f holds size bytes.
func sealChecksum(f *os.File, size int64, h hash.Hash) error {
	lay, err := checkIPCFile(f, size)
	return writeChecksum(f, lay, err, h)
}

// writeChecksum writes the digest of h over both placeholders of a file
// whose structure checkIPCFile found to be lay (or err).
func writeChecksum(f *os.File, lay ipcLayout, err error, h hash.Hash) error {
	if err != nil {
		return fmt.Errorf("checksum: the file just written does not read back: %w", err)
	}
	if lay.checksum != checksumPlaceholder || lay.sumPos[0] < 0 || lay.sumPos[1] < 0 {
		return errors.New("checksum: no placeholder in the schema metadata")
	}
	sum := []byte(hex.EncodeToString(h.Sum(nil)))
	for _, p := range lay.sumPos {
		if _, err := f.WriteAt(sum, p); err != nil {
			return err
		}
	}
	return nil
}

// verifyIPCFile checks the structure of the Arrow IPC file f (size bytes)
// and, when it carries one, its checksum. Files without a checksum (older
// simtrain, other writers) pass on structure alone. Errors wrap ErrDamaged.
func verifyIPCFile(f io.ReaderAt, size int64) error {
	lay, err := checkIPCFile(f, size)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if lay.checksum == "" {
		return nil
	}
	got, err := hashZeroed(f, size, lay.sumPos[:])
	if err != nil {
		return err
	}
	if got != lay.checksum {
		return fmt.Errorf("%w: checksum mismatch (the file says %.12s…, its bytes hash to %.12s…)", ErrDamaged, lay.checksum, got)
	}
	return nil
}

// hashZeroed is the SHA-256 of f's first size bytes with the 64 bytes at
// each position in zeroed replaced by ASCII '0'.
func hashZeroed(f io.ReaderAt, size int64, zeroed []int64) (string, error) {
	h := sha256.New()
	pos := slices.Clone(zeroed)
	slices.Sort(pos)
	at := int64(0)
	for _, p := range pos {
		if p < at || p+checksumHexLen > size {
			return "", fmt.Errorf("%w: checksum copies overlap", ErrDamaged)
		}
		if _, err := io.Copy(h, io.NewSectionReader(f, at, p-at)); err != nil {
			return "", err
		}
		io.WriteString(h, checksumPlaceholder)
		at = p + checksumHexLen
	}
	if _, err := io.Copy(h, io.NewSectionReader(f, at, size-at)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// VerifyFile checks an Arrow IPC file's structure and checksum without
// decoding it (see verifyIPCFile). simtrain's readers do the same before
// every read; VerifyFile lets a caller sort files before reading them.
func VerifyFile(path string) error {
	f, err := openVerified(path)
	if err == nil {
		f.Close()
	}
	return err
}

// openVerified opens the Arrow IPC file at path after checking its
// structure and checksum (verifyIPCFile): arrow-go trusts the lengths in a
// file, so this runs before it reads anything.
func openVerified(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("output: read %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		err = verifyIPCFile(f, st.Size())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	return f, nil
}

// Parquet files (simtrain merge --out FILE.parquet) carry the checksum in
// their key-value metadata, defined the same way: the SHA-256 of the file
// with the value's 64 digits replaced by '0's. The value is stored once,
// in the Thrift footer, where the key is followed by the compact
// protocol's field header of the value (0x18) and its length (0x40); that
// sequence locates it without decoding the footer, so the check runs
// before the Parquet reader (sim/output/parquet) sees the file.
var parquetChecksumKey = append([]byte(MetaChecksum), 0x18, checksumHexLen)

// parquetChecksumPos finds the checksum value in the footer of a Parquet
// file of size bytes: its position, or -1 without one.
func parquetChecksumPos(r io.ReaderAt, size int64) (int64, string, error) {
	if size < 12 {
		return -1, "", errors.New("not a Parquet file: too short")
	}
	tail, err := readAt(r, size-8, 8)
	if err != nil {
		return -1, "", err
	}
	head, err := readAt(r, 0, 4)
	if err != nil {
		return -1, "", err
	}
	if string(tail[4:]) != "PAR1" || string(head) != "PAR1" {
		return -1, "", errors.New("not a Parquet file (no PAR1 magic at both ends)")
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n <= 0 || n > size-12 {
		return -1, "", fmt.Errorf("footer length %d does not fit in a file of %d bytes", n, size)
	}
	start := size - 8 - n
	footer, err := readAt(r, start, n)
	if err != nil {
		return -1, "", err
	}
	i := bytes.Index(footer, parquetChecksumKey)
	if i < 0 {
		return -1, "", nil
	}
	if bytes.Index(footer[i+1:], parquetChecksumKey) >= 0 {
		return -1, "", errors.New("the checksum key appears twice in the footer")
	}
	p := i + len(parquetChecksumKey)
	if p+checksumHexLen > len(footer) {
		return -1, "", errors.New("the checksum runs past the footer")
	}
	return start + int64(p), string(footer[p : p+checksumHexLen]), nil
}

// sealParquetChecksum writes the digest over a Parquet file's placeholder.
func sealParquetChecksum(f *os.File, size int64, h hash.Hash) error {
	p, v, err := parquetChecksumPos(f, size)
	if err != nil || p < 0 || v != checksumPlaceholder {
		return fmt.Errorf("checksum: no placeholder in the Parquet footer (%v)", err)
	}
	_, err = f.WriteAt([]byte(hex.EncodeToString(h.Sum(nil))), p)
	return err
}

// verifyParquetFile checks a Parquet file's checksum when it has one.
func verifyParquetFile(r io.ReaderAt, size int64) error {
	p, v, err := parquetChecksumPos(r, size)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if p < 0 {
		return nil
	}
	got, err := hashZeroed(r, size, []int64{p})
	if err != nil {
		return err
	}
	if got != v {
		return fmt.Errorf("%w: checksum mismatch (the file says %.12s…, its bytes hash to %.12s…)", ErrDamaged, v, got)
	}
	return nil
}
