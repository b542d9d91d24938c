package parallel

import "github.com/simtrain/simtrain/sim/hugepages"

// adviseHugePages backs s with 2 MiB pages where the system allows
// (sim/hugepages). Full mode's per-task arrays (fullexec.go: an input
// counter per task and rank, task times for the kept ranks) are most of a
// 16,384-rank run's memory and are touched for the first time during the
// run: with 4 KiB pages that cost hundreds of thousands of page faults and
// a TLB miss on most accesses (issue 18; figures in docs/design.md,
// "Speed").
func adviseHugePages[T any](s []T) { hugepages.Advise(s) }
