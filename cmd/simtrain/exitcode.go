package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/simulation"
)

// Exit statuses, one convention for every command (README, "Exit status"):
// 0 success; 1 the simulation or the comparison failed (validate above
// --max-mape, a run that could not be simulated, an I/O error); 2 bad input
// (a flag, a file or a field), always with a one-line error naming it; 130
// interrupted by Ctrl-C (128 + SIGINT, the shells' convention).
const (
	exitOK          = 0
	exitFailed      = 1
	exitBadInput    = 2
	exitInterrupted = 130
)

// exitError is an error with its exit status; a command returns one when
// the status is not what the error's kind would give (run with several
// files: the worst of their statuses).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// inputError marks err as bad input (exit status 2). nil stays nil.
func inputError(err error) error {
	if err == nil {
		return nil
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return &usageError{err}
}

// cobraInputErrors are the beginnings of the errors cobra itself returns
// for a bad command line (it has no error types for them).
var cobraInputErrors = []string{
	"unknown command", "unknown flag", "unknown shorthand flag", "required flag(s)",
	"if any flags in the group", "none of the others can be", "at least one of the flags",
	"invalid argument", "flag needs an argument", "bad flag syntax", "accepts ", "requires at least", "requires at most",
}

// exitCode classifies err.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitBadInput
	}
	for _, target := range []error{simulation.ErrBudget, engine.ErrTimeOverflow, output.ErrUnsafeOutput, output.ErrDamaged} {
		if errors.Is(err, target) {
			return exitBadInput
		}
	}
	msg := err.Error()
	for _, p := range cobraInputErrors {
		if strings.HasPrefix(msg, p) {
			return exitBadInput
		}
	}
	return exitFailed
}

// errorLine is err on one line: line breaks inside a message (a library's
// multi-line error) become "; ".
func errorLine(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	return strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}

// execute runs the command line args under ctx and returns the process's
// exit status; the error, if any, is one line on stderr.
func execute(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	if len(args) > 0 && strings.HasPrefix(args[0], "__complete") {
		fillCatalogUsage(root) // completions describe the flags
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		fmt.Fprintln(stderr, "simtrain: interrupted")
		return exitInterrupted
	}
	fmt.Fprintln(stderr, "simtrain: "+errorLine(err))
	return exitCode(err)
}
