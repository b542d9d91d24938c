package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/cobra"
)

// TestSubCommandNames: each entry of subCommands is named as its command
// is, so newRootCmdFor finds the command a command line names.
func TestSubCommandNames(t *testing.T) {
	for _, sc := range subCommands {
		if got := sc.build().Name(); got != sc.name {
			t.Errorf("subCommands entry %q builds command %q", sc.name, got)
		}
		if got := newRootCmdFor([]string{sc.name}).Commands(); len(got) != 1 || got[0].Name() != sc.name {
			t.Errorf("newRootCmdFor(%q) built %d commands, want %q alone", sc.name, len(got), sc.name)
		}
	}
	if got := len(newRootCmdFor([]string{"help"}).Commands()); got != len(subCommands) {
		t.Errorf("newRootCmdFor(help) built %d commands, want the whole tree's %d", got, len(subCommands))
	}
}

// TestRootCmdForSameOutputs runs command lines through the tree main
// builds (newRootCmdFor) and through the whole tree: stdout, stderr and
// exit status must be the same.
func TestRootCmdForSameOutputs(t *testing.T) {
	cases := [][]string{
		nil,
		{"--help"},
		{"help"},
		{"help", "sweep"},
		{"swep"},
		{"bogus", "x"},
		{"--bogus", "version"},
		{"version"},
		{"version", "extra"},
		{"version", "--bogus"},
		{"sweep"},
		{"run", "--bogus"},
		{"run", "no-such-file.yaml", "--quiet"},
		{"estimate", "--help"},
		{"estimate", "train", "--help"},
		{"estimate", "bogus"},
		{"list", "gpus"},
		{"completion", "bash"},
		{"__complete", "sweep", "--"},
	}
	for _, sc := range subCommands {
		cases = append(cases, []string{sc.name, "--help"}, []string{sc.name, "-h"})
	}
	run := func(root func([]string) *cobra.Command, args []string) (string, string, int) {
		var out, errb bytes.Buffer
		code := execute(context.Background(), root(args), args, &out, &errb)
		return out.String(), errb.String(), code
	}
	for _, args := range cases {
		wantOut, wantErr, wantCode := run(func([]string) *cobra.Command { return newRootCmd() }, args)
		gotOut, gotErr, gotCode := run(newRootCmdFor, args)
		if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
			t.Errorf("%q: newRootCmdFor gave (exit %d)\n%s\n%s\nthe whole tree (exit %d)\n%s\n%s",
				args, gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
		}
	}
}
