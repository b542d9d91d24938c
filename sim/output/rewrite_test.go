package output

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// sweepSummaryRows returns n summary rows shaped like the 1,000-point 70B
// sweep's (scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml): a distinct
// run id and name per row, an error on about a third of them from 17
// messages, most dictionary columns one value for the whole sweep and a few
// two, every row's dictionary strings shared with the other rows' (as the
// sweep's rows share their plans' strings), the layouts' numbers varying.
// It is deterministic.
func sweepSummaryRows(n int) []SummaryRow {
	errs := make([]string, 17)
	for i := range errs {
		errs[i] = fmt.Sprintf("training.global_batch: %d is not a multiple of dp*micro_batch = %d*%d", 512<<(i%3), 1<<(i%11), 1<<(i%5))
	}
	two := func(i, k int, a, b string) string {
		if (i/k)%2 == 0 {
			return a
		}
		return b
	}
	rows := make([]SummaryRow, n)
	for i := range rows {
		tp, pp, mb := int64(1)<<(i%4), int64(1)<<(i/4%5), int64(1)<<(i/20%5)
		r := &rows[i]
		*r = SummaryRow{
			RunID:       fmt.Sprintf("%08x-%04x-5%03x-8%03x-%012x", uint32(i)*2654435761, i*7919%65536, i%4096, (i*31)%4096, uint64(i)*0x9e3779b97f4a7c15>>16),
			Name:        "llama3-70b-1024-h100-layouts-" + strconv.Itoa(i),
			ModelPreset: "llama3-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, FFN: 28672, Vocab: 128256,
			Experts: 1, TopK: 1, HeadDim: 128, Activation: "swiglu", Attention: "mha", Norm: "rmsnorm",
			Params: 70.55e9, ActiveParams: 70.55e9, SeqLen: 8192, GlobalBatch: 1024, MicroBatch: mb,
			Precision: "bf16", Optimizer: "adamw", Recompute: two(i, 3, "selective", "full"), FlashAttention: true,
			MasterDtype: "fp32", GradDtype: "bf16", OptimizerStateDtype: "fp32",
			RecomputeModules: two(i, 3, "core_attn", ""), CrossEntropy: "fused", AttentionKernel: "auto",
			CUDAGraphs: "none", HostDispatch: "eager", GPU: "h100-sxm", Nodes: 128, GPUsPerNode: 8, NumGPUs: 1024,
			IntraNode: "nvswitch", Network: "rail-optimized", NIC: "ib-ndr-400", NICGbps: 400, NICsPerNode: 8,
			Oversubscription: 1, PodGPUs: 1024, GPUHourUSD: 2.5, PUE: 1.2,
			TP: tp, PP: pp, DP: 1024 / tp / pp, CP: 1, EP: 1, SP: tp > 1, Zero: int64(i % 4),
			Zero3PrefetchBucket: 5e7, GradBucket: 4e7, Schedule: "1f1b", VirtualStages: 1, Microbatches: 1024 / (1024 / tp / pp) / mb,
			ExpertTP: 1, EPBackend: "nccl", CPImpl: "p2p", TPImpl: two(i, 7, "megatron", "te"), Zero3Impl: two(i, 5, "fsdp", "deepspeed"),
			Order: two(i, 11, "tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"), OverlapGradReduce: true, OverlapParamGather: i%2 == 0,
			Fidelity: "analytic", Steps: 1, Seed: 1, Variability: "none",
		}
		if i%3 == 1 {
			r.Error = errs[i%len(errs)]
			continue
		}
		f := float64(i + 1)
		r.StepTimeS, r.StepP50S, r.StepP99S = 4+f/97, 4+f/97, 4+f/96
		r.TokensPerS = 8192 * 1024 / r.StepTimeS
		r.TokensPerSPerGPU = r.TokensPerS / 1024
		r.ModelFLOPsPerStep, r.HardwareFLOPsPerStep = 3.6e18+f*1e12, 4.4e18+f*1e12
		r.MFU, r.HFU, r.TFLOPsPerGPU = 0.3+f/1e4, 0.36+f/1e4, 400+f/7
		r.BubbleFraction, r.ComputeS = f/2e3, 3+f/113
		r.HostSyncS, r.HostBoundS, r.HostIssueS = f/1e6, f/2e6, f/3e6
		r.ExposedTPS, r.ExposedDPS, r.ExposedPPS = f/1e3, f/2e3, f/3e3
		r.PeakMemBytes, r.MinPeakMemBytes, r.MemCapacityBytes = 60e9+int64(i)*1e7, 50e9+int64(i)*1e7, 80e9
		r.MemMarginBytes = r.MemCapacityBytes - r.PeakMemBytes
		r.Fits = i%5 != 0
		r.CostUSDPerStep, r.EnergyKWhPerStep, r.Events = f/3, f/7, int64(i)*1013
		r.SimWallS = f / 1e4
	}
	return rows
}

// rewriteCase is one pinned output of writeTableBatches.
type rewriteCase struct {
	name  string
	write func(mem memory.Allocator, path string) error
	sha   string // SHA-256 of the file, as main wrote it before the rewrite's speed-up
}

func rewriteCases() []rewriteCase {
	meta := map[string]string{"sweep": "llama3-70b-1024-h100-layouts", "simtrain_version": "test"}
	odd := makeRows[allKinds](1001)
	odd[5].S, odd[6].D = "a\xffb", "\xfe"
	odd[7].B, odd[8].B = true, true
	wide := make([]allKinds, maxInt16Dict+2)
	for i := range wide {
		wide[i].D = "k" + strconv.Itoa((i*7919)%len(wide))
	}
	return []rewriteCase{
		{"sweep summary, batch 64", func(mem memory.Allocator, p string) error {
			return writeTableBatches(mem, p, sweepSummaryRows(1000), meta, 64)
		}, "53b03d0dbf4d2332e67553409cce81c67f2c06f166f87b1f3decda5652a66981"},
		{"sweep summary, 97 rows, batch 64", func(mem memory.Allocator, p string) error {
			return writeTableBatches(mem, p, sweepSummaryRows(97), meta, 64)
		}, "f88b1c083a83d8d5281cb09ef009500f9e0ee53af93953aefda816aac7db6ec3"},
		{"filled summary rows, batch 7", func(mem memory.Allocator, p string) error {
			return writeTableBatches(mem, p, makeRows[SummaryRow](50), nil, 7)
		}, "3f77fbdc9d1c094909a97c661ea61823d24fdadf8befa04697723a4febe6e75d"},
		{"all kinds with nulls and invalid UTF-8, batch 13", func(mem memory.Allocator, p string) error {
			return writeTableBatches(mem, p, odd, meta, 13)
		}, "ed11449e913ebdab019846f9697b41a4be191c01e5fa0e38cc43f31e202c2a32"},
		{"int32 dictionary indices", func(mem memory.Allocator, p string) error {
			return writeTableBatches(mem, p, wide, nil, BatchRows)
		}, "b70fc05081eaeccb4309b2895af39a09e5eaae71c367c317b776b3be61cc1d98"},
		{"no rows", func(mem memory.Allocator, p string) error {
			return writeTableBatches(mem, p, []SummaryRow{}, meta, 64)
		}, "995a50a711d317833cccd6ea247f50faddf58518d197c2092ded6eb55dddd8f6"},
	}
}

// TestRewriteBytesPinned writes fixed rows, the 1,000-point sweep's summary
// among them, and checks each file's SHA-256 against the value main's
// writer gave before the final rewrite was made faster: the bytes of a
// summary must not change for the same rows and metadata.
func TestRewriteBytesPinned(t *testing.T) {
	for _, tc := range rewriteCases() {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "t.arrow")
			if err := tc.write(checkedMem(t), path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got := hex.EncodeToString(sum[:]); got != tc.sha {
				t.Errorf("%d bytes, SHA-256 %s, want %s", len(b), got, tc.sha)
			}
		})
	}
}

// BenchmarkSummaryFinalRewrite is the sweep's final summary rewrite: the
// 1,000 rows of sweepSummaryRows, already sorted, written in record
// batches of 64 rows (the sweep's --batch) to a file in a temporary
// directory, as AppendFile.Flush writes them.
func BenchmarkSummaryFinalRewrite(b *testing.B) {
	rows := sweepSummaryRows(1000)
	meta := map[string]string{"sweep": "llama3-70b-1024-h100-layouts", "simtrain_version": "test"}
	path := filepath.Join(b.TempDir(), "summary.arrow")
	b.ReportAllocs()
	for b.Loop() {
		if err := writeTableBatches(memory.DefaultAllocator, path, rows, meta, 64); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSummaryFramedRewrite is the sweep's final summary rewrite as
// an AppendFile makes it once its frame is made (frame.go): the 1,000
// rows of sweepSummaryRows, sorted, rewritten in record batches of 64
// rows with the header and footer schema the first rewrite left, each
// batch encoded by the frame's encoder (batchenc.go). It writes no other
// part than BenchmarkSummaryFinalRewrite, which goes through arrow-go's
// FileWriter.
func BenchmarkSummaryFramedRewrite(b *testing.B) {
	a, err := OpenAppendFile(filepath.Join(b.TempDir(), "summary.arrow"), map[string]string{"sweep": "llama3-70b-1024-h100-layouts", "simtrain_version": "test"},
		false, func(x, y *SummaryRow) int { return strings.Compare(x.Name, y.Name) })
	if err != nil {
		b.Fatal(err)
	}
	a.BatchRows = 64
	a.Add(sweepSummaryRows(1000)...)
	if err := a.Flush(); err != nil {
		b.Fatal(err)
	}
	if a.frame == nil {
		b.Fatal("no frame after the first rewrite")
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.write(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBatchColumnsCarrySchemaTypes: every column of a built batch carries
// the very DataType value its schema field holds (for a dictionary column
// the same *arrow.DictionaryType), so NewRecordBatch's type check stops at
// the interface comparison instead of reflect.DeepEqual; and a second full
// batch hands out the same fixed-width arrays as the first.
func TestBatchColumnsCarrySchemaTypes(t *testing.T) {
	tb, err := newTableBuilder(checkedMem(t), sweepSummaryRows(150), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.release()
	first := tb.batch(0, 64)
	defer first.Release()
	for i, col := range first.Columns() {
		if f := tb.schema.Field(i); col.DataType() != f.Type {
			t.Errorf("column %q: type %v is not the schema's value %v", f.Name, col.DataType(), f.Type)
		}
	}
	second := tb.batch(64, 128)
	defer second.Release()
	for i, f := range tb.schema.Fields() {
		same := first.Column(i) == second.Column(i)
		if want := f.Type.ID() != arrow.STRING; same != want {
			t.Errorf("column %q: second batch reuses the first's array: %v, want %v", f.Name, same, want)
		}
	}
}
