package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time with -ldflags "-X main.version=..."; otherwise
// the module version or VCS revision from the build info is shown.
var version = ""

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the simtrain version",
		Example: "  simtrain version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version
			rev := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				if v == "" {
					v = bi.Main.Version
				}
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						rev = s.Value[:12]
					}
				}
			}
			if v == "" {
				v = "(devel)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "simtrain %s", v)
			if rev != "" {
				fmt.Fprintf(cmd.OutOrStdout(), " %s", rev)
			}
			fmt.Fprintf(cmd.OutOrStdout(), " %s/%s %s\n", runtime.GOOS, runtime.GOARCH, runtime.Version())
			return nil
		},
	}
}

// noArgs rejects positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}
