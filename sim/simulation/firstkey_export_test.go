package simulation

import "github.com/simtrain/simtrain/sim/parallel"

// WithOnBuild returns opt with its test hook onBuild set to f, for
// TestFirstBuildKey, and alwaysShorten set to always.
func WithOnBuild(opt Options, always bool, f func(*parallel.StepConfig)) Options {
	opt.onBuild, opt.alwaysShorten = f, always
	return opt
}
