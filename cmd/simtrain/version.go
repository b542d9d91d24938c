package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/output"
)

// Stamped at link time by tools/release.sh (and the Dockerfile):
//
//	go build -ldflags "-X main.version=v0.4.0 -X main.commit=$(git rev-parse HEAD) -X main.date=2026-12-01T20:00:00Z"
//
// Unstamped, version is the module version from the build info (what
// `go install ...@v0.4.0` records, "(devel)" for a build in a clone) and
// commit the VCS revision Go records for builds in a clone.
var version, commit, date string

// versionString is the one line `simtrain version` prints: version, commit
// (12 hex digits), build date when stamped, platform and Go release.
func versionString() string {
	v, rev := version, commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "simtrain " + v
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		s += " " + rev
	}
	if date != "" {
		s += " built " + date
	}
	return fmt.Sprintf("%s %s/%s %s", s, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func newVersionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the simtrain version",
		Example: "  simtrain version\n  simtrain version --format json   # {\"version\":…,\"schema_version\":\"3\",…}",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkChoice("format", format, "table", "json"); err != nil {
				return err
			}
			if format == "json" {
				return writeJSONLine(cmd.OutOrStdout(), map[string]string{
					"version": versionString(), "schema_version": output.SchemaVersion,
					"go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH,
				})
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "table (one line) or json (one object, with the schema_version of the files it writes)")
	return cmd
}

// noArgs rejects positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}
