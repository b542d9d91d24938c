package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/simtrain/simtrain/sim/hardware"
)

// subCommand is one sub-command of the root: its name (the first word of
// its Use), its help group ("" for none) and its constructor.
type subCommand struct {
	name, group string
	build       func() *cobra.Command
}

// subCommands lists the root's sub-commands in the order help shows them.
var subCommands = []subCommand{
	{"run", "sim", newRunCmd},
	{"plan", "sim", newPlanCmd},
	{"goodput", "sim", newGoodputCmd},
	{"sweep", "sim", newSweepCmd},
	{"merge", "sim", newMergeCmd},
	{"best", "sim", newBestCmd},
	{"report", "sim", newReportCmd},
	{"validate", "sim", newValidateCmd},
	{"calibrate", "sim", newCalibrateCmd},
	{"estimate", "tools", newEstimateCmd},
	{"collective", "tools", newCollectiveCmd},
	{"topology", "tools", newTopologyCmd},
	{"list", "tools", newListCmd},
	{"version", "", newVersionCmd},
}

// newRootCmd builds the whole command tree. Each sub-command has its own
// constructor so tests can run it with SetArgs/SetOut.
func newRootCmd() *cobra.Command {
	return newRoot(subCommands)
}

// newRootCmdFor builds the command tree that args (the command line less
// the program's name) need: when args[0] names a sub-command, the root
// with that sub-command alone, else the whole tree. A command that runs
// never reads its siblings (no aliases, no persistent flags on the root;
// help, completion, unknown commands and flags before the command still
// get the whole tree), so its outputs are the same. Building the thirteen
// others and cobra's completion command was ≈ 5% of the start's CPU (≈ 1 ms,
// paid by every command, a sweep's included).
func newRootCmdFor(args []string) *cobra.Command {
	if len(args) > 0 {
		for _, sc := range subCommands {
			if sc.name == args[0] {
				root := newRoot([]subCommand{sc})
				// The completion command cannot run when args[0] is
				// another command: cobra would build it (with its four
				// shells) for nothing.
				root.CompletionOptions.DisableDefaultCmd = true
				return root
			}
		}
	}
	return newRoot(subCommands)
}

// newRoot builds the root command with the sub-commands subs.
func newRoot(subs []subCommand) *cobra.Command {
	root := &cobra.Command{
		Use:   "simtrain",
		Short: "Discrete-event simulator of distributed LLM training",
		Long: `simtrain predicts how a training step of a large language model plays out on a
cluster: step time, where the time goes, memory per GPU, MFU. It simulates the
compute and communication tasks of every rank on a graph of GPUs and links.`,
		Example:       "  simtrain run scenarios/quickstart.yaml\n  simtrain collective --gpu h100-sxm --nodes 1 --op all_reduce --sizes 1M:8G",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	root.AddGroup(
		&cobra.Group{ID: "sim", Title: "Simulation:"},
		&cobra.Group{ID: "tools", Title: "Building blocks:"},
	)
	for _, sc := range subs {
		c := sc.build()
		c.GroupID = sc.group
		root.AddCommand(c)
	}
	// Help (and shell completion, see execute) is where the GPU names of
	// the flags' usage are read: the catalog loads then, not for every
	// command (loading it was ≈ 2% of a sweep's CPU).
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		fillCatalogUsage(root)
		help(c, args)
	})
	return root
}

// catalogGPUsMark and catalogNICsMark stand for the catalog's GPU and NIC
// names in a flag's usage until fillCatalogUsage writes them in, so that
// building the command tree does not load the catalog (≈ 10 ms of YAML
// decoding, before any command could start).
const (
	catalogGPUsMark = "\x00catalog GPUs\x00"
	catalogNICsMark = "\x00catalog NICs\x00"
)

// fillCatalogUsage writes the catalog's GPU and NIC names into every flag
// usage of root's command tree that holds catalogGPUsMark or
// catalogNICsMark.
func fillCatalogUsage(root *cobra.Command) {
	var gpus, nics string
	var visit func(c *cobra.Command)
	fill := func(f *pflag.Flag) {
		if strings.Contains(f.Usage, catalogGPUsMark) {
			if gpus == "" {
				gpus = strings.Join(hardware.GPUNames(), ", ")
			}
			f.Usage = strings.ReplaceAll(f.Usage, catalogGPUsMark, gpus)
		}
		if strings.Contains(f.Usage, catalogNICsMark) {
			if nics == "" {
				nics = strings.Join(hardware.NICNames(), ", ")
			}
			f.Usage = strings.ReplaceAll(f.Usage, catalogNICsMark, nics)
		}
	}
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(fill)
		c.PersistentFlags().VisitAll(fill)
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}
