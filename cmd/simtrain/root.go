package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the whole command tree. Each sub-command has its own
// constructor so tests can run it with SetArgs/SetOut.
func newRootCmd() *cobra.Command {
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
	for _, c := range []*cobra.Command{newRunCmd(), newPlanCmd(), newGoodputCmd(), newSweepCmd(), newMergeCmd(), newBestCmd(), newReportCmd(), newValidateCmd(), newCalibrateCmd()} {
		c.GroupID = "sim"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newEstimateCmd(), newCollectiveCmd(), newTopologyCmd(), newListCmd()} {
		c.GroupID = "tools"
		root.AddCommand(c)
	}
	root.AddCommand(newVersionCmd())
	return root
}
