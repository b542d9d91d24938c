package main

import "github.com/simtrain/simtrain/tools/internal/scenfile"

// scen is a scenario file under construction (scenfile.Scenario) plus the
// translation helpers of this generator (translate.go).
type scen struct{ scenfile.Scenario }

func bp(b bool) *bool { return scenfile.BP(b) }
