package network_test

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/units"
)

type printDone struct{}

func (printDone) TransferDone(now engine.Time, tag int64) {
	fmt.Printf("transfer %d arrived at %v\n", tag, now)
}

// Two 1 GB transfers share a 10 GB/s link (latency 1 µs). At flow fidelity
// each gets 5 GB/s: 1e9 bytes take 200 ms, plus 1 µs. At analytic fidelity
// each is alone on the link: 100 ms plus 1 µs.
func Example() {
	bw := []units.BytesPerSecond{10e9}
	lat := []engine.Time{engine.Microsecond}
	for _, fid := range []network.Fidelity{network.Flow, network.Analytic} {
		e := engine.New()
		f := network.New(e, bw, lat, fid)
		f.Start([]int32{0}, 1e9, printDone{}, 1)
		f.Start([]int32{0}, 1e9, printDone{}, 2)
		e.Run()
		fmt.Printf("%v: link 0 carried %.0f bytes, busy %v\n", fid, f.LinkBytes(0), f.LinkBusy(0))
	}
	// Output:
	// transfer 1 arrived at 200.001ms
	// transfer 2 arrived at 200.001ms
	// flow: link 0 carried 2000000000 bytes, busy 200ms
	// transfer 1 arrived at 100.001ms
	// transfer 2 arrived at 100.001ms
	// analytic: link 0 carried 2000000000 bytes, busy 100ms
}
