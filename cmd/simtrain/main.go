// Command simtrain simulates distributed LLM training on a modelled cluster:
// step time, where the time goes, memory per rank and MFU.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	// The first Ctrl-C cancels ctx: every long phase stops within a second
	// and leaves no partial output. Then the default action is restored, so
	// a second Ctrl-C ends the process at once. AfterFunc starts the
	// goroutine that restores it only then: no goroutine (and its stack)
	// waits for it at every process's start.
	context.AfterFunc(ctx, stop)
	code := execute(ctx, newRootCmdFor(os.Args[1:]), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
