package main

import (
	"fmt"
	"path/filepath"

	"github.com/simtrain/simtrain/sim/output"
)

// oldSchemaError turns the failure to read file, written by a simtrain of
// another schema_version whose columns changed, into one line that names
// the version and the command that rebuilds the file (advice gets the
// file's metadata and says what to run). Any other error is returned as it is.
func oldSchemaError(err error, file string, advice func(meta map[string]string) string) error {
	e, ok := output.AsSchemaVersion(err)
	if !ok {
		return err
	}
	return inputError(fmt.Errorf("%s was written with schema_version %s; this simtrain reads %s (results/README.md lists the changes); %s",
		file, e.Version, output.SchemaVersion, advice(e.Meta)))
}

// rebuildSweep is the command that writes a sweep summary file again in
// the current schema: its shard, into a new directory.
func rebuildSweep(meta map[string]string, sweepFile, dir string) string {
	if sweepFile == "" {
		sweepFile = "SWEEP.yaml"
		if name := meta["sweep"]; name != "" {
			sweepFile = fmt.Sprintf("SWEEP.yaml (the sweep %q)", name)
		}
	}
	cmd := fmt.Sprintf("simtrain sweep %s --out %s", sweepFile, dir)
	if s := meta["shard"]; s != "" && s != "0/1" {
		cmd += " --shard " + s
	}
	return cmd
}

// rebuildRun is the command that writes a run directory again.
func rebuildRun(meta map[string]string, dir string) string {
	scen := "SCENARIO.yaml"
	if name := meta[output.MetaScenario]; name != "" {
		scen = fmt.Sprintf("SCENARIO.yaml (the scenario %q)", name)
	}
	return fmt.Sprintf("simtrain run %s --out %s", scen, filepath.Dir(filepath.Clean(dir)))
}
