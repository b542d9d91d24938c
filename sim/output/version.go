package output

import (
	"errors"
	"fmt"
)

// SchemaVersionError is a file written with another schema_version whose
// columns do not read into this version's rows (a type or a column
// changed). Commands add the command that rebuilds the file, so that an
// old file gets a one-line answer rather than a type mismatch.
type SchemaVersionError struct {
	Version string            // the file's schema_version
	Meta    map[string]string // the file's schema metadata (sweep, shard, scenario, …)
	Err     error             // the first column that does not read
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("written with schema_version %s, this simtrain reads %s (results/README.md lists the changes): %v",
		e.Version, SchemaVersion, e.Err)
}

func (e *SchemaVersionError) Unwrap() error { return e.Err }

// versionMismatch wraps err, the failure to match a file's columns, in a
// [SchemaVersionError] when meta names another schema_version.
func versionMismatch(meta map[string]string, err error) error {
	if v := meta[MetaSchemaVersion]; err != nil && v != "" && v != SchemaVersion {
		return &SchemaVersionError{Version: v, Meta: meta, Err: err}
	}
	return err
}

// AsSchemaVersion reports whether err comes from a file of another
// schema_version, and returns that error.
func AsSchemaVersion(err error) (*SchemaVersionError, bool) {
	var e *SchemaVersionError
	ok := errors.As(err, &e)
	return e, ok
}
