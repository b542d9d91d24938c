package workload

import (
	"reflect"
	"slices"
	"testing"
)

// TestPooledBuilderEqualsFresh: forward's builders (and the embedding's
// and head's) come from a pool, so a layer's ops may be built in storage that last held another model's
// longer list (an MoE, MLA or FP8 layer). Each public list built that way
// must equal the list a fresh builder gives, and no returned list may
// share the pool's storage (every earlier result is checked again at the
// end, after the later builds reused the builders).
func TestPooledBuilderEqualsFresh(t *testing.T) {
	type build struct {
		m     Model
		layer int
		s     Shape
	}
	var cases []build
	for _, name := range []string{"llama3-8b", "deepseek-v3", "gpt-oss-20b", "mixtral-8x7b"} {
		m, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		shapes := []Shape{
			{MicroBatch: 1, Seq: 4096, Dtype: BF16, FlashAttention: true},
			{MicroBatch: 2, Seq: 2048, Dtype: FP8, TP: 2, SP: true},
		}
		for _, s := range shapes {
			for _, l := range []int{0, 1, m.StackLayers() - 1} {
				cases = append(cases, build{m, l, s})
			}
		}
	}
	// dirty is a builder that last built case i: a pool entry whose list
	// and fields belong to another layer.
	dirty := func(i int) *builder {
		c := cases[i%len(cases)]
		b := &builder{}
		c.m.forwardInto(b, c.layer, c.s.forLayer(c.m, c.layer))
		return b
	}
	type result struct{ got, want []Op }
	var kept []result
	for i, c := range cases {
		fresh := &builder{}
		c.m.forwardInto(fresh, c.layer, c.s.forLayer(c.m, c.layer))
		wantF := fwdList(fresh.ops)
		wantB := bwdList(fresh.ops, fresh.gin, fresh.act)
		for j, p := range []Pass{Forward, Backward} {
			want := []([]Op){wantF, wantB}[j]
			builders.Put(dirty(i + 1 + j))
			got := c.m.LayerOps(c.layer, c.s, p)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s layer %d %+v pass %v: pooled builder gave %d ops, fresh %d", c.m.Name, c.layer, c.s, p, len(got), len(want))
			}
			kept = append(kept, result{got, slices.Clone(want)})
		}
		builders.Put(dirty(i + 3))
		if got := c.m.RecomputeOps(c.layer, c.s, RecomputeFull); !reflect.DeepEqual(got, wantF) {
			t.Fatalf("%s layer %d %+v: pooled full recompute differs from a fresh forward", c.m.Name, c.layer, c.s)
		}
		// The forward ops themselves, their fused linears (kept in the
		// builder's parts storage) included, and the per-op selective
		// recompute listed from those linears.
		d := dirty(i + 5)
		c.m.forwardInto(d, c.layer, c.s.forLayer(c.m, c.layer))
		if !reflect.DeepEqual(d.ops, fresh.ops) || len(d.parts) != len(fresh.parts) {
			t.Fatalf("%s layer %d %+v: a used builder's ops (%d linears kept) differ from a fresh one's (%d)", c.m.Name, c.layer, c.s, len(d.parts), len(fresh.parts))
		}
		builders.Put(&builder{})
		wantSel := c.m.RecomputeOps(c.layer, c.s, RecomputeSelectiveOp)
		builders.Put(dirty(i + 6))
		if got := c.m.RecomputeOps(c.layer, c.s, RecomputeSelectiveOp); !reflect.DeepEqual(got, wantSel) {
			t.Fatalf("%s layer %d %+v: per-op selective recompute in a used builder differs from an empty one's", c.m.Name, c.layer, c.s)
		}
		// The embedding and head lists: built after an empty builder is
		// put back (the one the next Get hands out on this P) against
		// built in another layer's builder.
		for _, p := range []Pass{Forward, Backward} {
			for _, f := range []func(Shape, Pass) []Op{c.m.EmbeddingOps, c.m.HeadOps} {
				builders.Put(&builder{})
				want := f(c.s, p)
				builders.Put(dirty(i + 4))
				got := f(c.s, p)
				if len(want) == 0 || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %+v pass %v: embedding/head ops in a used builder: %d ops, in an empty one %d", c.m.Name, c.s, p, len(got), len(want))
				}
				kept = append(kept, result{got, slices.Clone(want)})
			}
		}
	}
	for _, r := range kept {
		if !reflect.DeepEqual(r.got, r.want) {
			t.Fatal("a returned op list changed after later builds: it shares the pool's storage")
		}
	}
}
