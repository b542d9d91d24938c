package topology

import "testing"

// Benchmarks (brief: building 16,384 GPUs must take well under a second;
// AppendRoute must not allocate). Run with
//
//	go test -run '^$' -bench . -benchmem ./sim/topology
var benchSpecs = []struct {
	name string
	spec Spec
}{
	{"rail-16384", Spec{GPU: "h100-sxm", Nodes: 2048}},
	{"clos-16384-pod2048-1to7", Spec{GPU: "h100-sxm", Nodes: 2048, Network: "clos", PodGPUs: 2048, Oversubscription: 7}},
	{"llama3-clos-24576", Spec{GPU: "h100-sxm", Nodes: 3072, Network: "clos", NIC: "roce-400", PodGPUs: 3072, Oversubscription: 7}},
	{"llama3-clos-131072", Spec{GPU: "h100-sxm", Nodes: 16384, Network: "clos", NIC: "roce-400", PodGPUs: 3072, Oversubscription: 7}},
}

func BenchmarkBuild(b *testing.B) {
	for _, bs := range benchSpecs {
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(bs.spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAppendRoute(b *testing.B) {
	c := mustBuild(b, Spec{GPU: "h100-sxm", Nodes: 2048})
	for _, p := range []struct {
		name     string
		src, dst int
	}{
		{"nvswitch", 3, 5},
		{"same-rail-3tier", 3, 16000*8/8 + 3},
		{"pxn-3tier", 3, 16381},
	} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]int32, 0, 16)
			h := uint64(0)
			for b.Loop() {
				buf = c.AppendRoute(buf[:0], p.src, p.dst, h)
				h++
			}
		})
	}
}

func BenchmarkSummary(b *testing.B) {
	c := mustBuild(b, benchSpecs[0].spec)
	for b.Loop() {
		_ = c.Summary()
	}
}
