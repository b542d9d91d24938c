package workload

import "testing"

// TestReplicatedLogitsHead prices the output layer of a TP-4 rank whose
// logits are gathered to every rank (Shape.ReplicatedLogits), by hand:
// micro-batch 2 × 128 tokens = 256 tokens, vocabulary 1000 (250 per rank),
// bf16, PyTorch's unfused fp32 loss. The rank's LM head GEMM stays
// vocabulary-sharded (256×250); the gather's concatenation copy reads and
// writes the gathered 256·1000 bf16 logits (512,000 B each way) and its
// backward copies the rank's 256·250 gradient slice (128,000 B); the loss
// runs over all 256,000 logits: the fp32 upcast reads 512,000 B and writes
// 1,024,000 B. Sharded (the default) prices neither the copy nor more than
// the rank's 64,000 logits.
func TestReplicatedLogitsHead(t *testing.T) {
	m := Model{Layers: 2, Hidden: 64, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 1000, Activation: "swiglu", Norm: "rmsnorm"}
	for _, tc := range []struct {
		repl                bool
		castRead, castWrite float64
		catFwd, catBwd      float64
		wantCat             bool
	}{
		{false, 2 * 64000, 4 * 64000, 0, 0, false},
		{true, 2 * 256000, 4 * 256000, 512000, 128000, true},
	} {
		s := Shape{MicroBatch: 2, Seq: 128, Dtype: BF16, TP: 4, SP: true, FlashAttention: true,
			CrossEntropy: CrossEntropyUnfused, ReplicatedLogits: tc.repl}
		var cat, cast *Op
		fwd := m.HeadOps(s, Forward)
		for i := range fwd {
			switch fwd[i].Name {
			case "logits_gather_cat":
				cat = &fwd[i]
			case "logits_to_fp32":
				cast = &fwd[i]
			}
		}
		if cast == nil || cast.BytesRead != tc.castRead || cast.BytesWritten != tc.castWrite {
			t.Fatalf("repl %v: logits_to_fp32 %+v, want read %g write %g", tc.repl, cast, tc.castRead, tc.castWrite)
		}
		if (cat != nil) != tc.wantCat {
			t.Fatalf("repl %v: logits_gather_cat present %v", tc.repl, cat != nil)
		}
		if cat != nil && (cat.BytesRead != tc.catFwd || cat.BytesWritten != tc.catFwd) {
			t.Errorf("repl %v: logits_gather_cat moves %g/%g B, want %g each way", tc.repl, cat.BytesRead, cat.BytesWritten, tc.catFwd)
		}
		found := false
		for _, o := range m.HeadOps(s, Backward) {
			if o.Name == "logits_gather_cat_bwd" {
				found = true
				if o.BytesRead != tc.catBwd || o.BytesWritten != tc.catBwd {
					t.Errorf("repl %v: the backward slice copy moves %g/%g B, want %g", tc.repl, o.BytesRead, o.BytesWritten, tc.catBwd)
				}
			}
		}
		if found != tc.wantCat {
			t.Errorf("repl %v: backward slice copy present %v", tc.repl, found)
		}
	}
	// Without TP there is nothing to gather: replicated is sharded.
	one := Shape{MicroBatch: 2, Seq: 128, Dtype: BF16, TP: 1, FlashAttention: true, CrossEntropy: CrossEntropyUnfused}
	a, b := m.HeadOps(one, Forward), m.HeadOps(func() Shape { s := one; s.ReplicatedLogits = true; return s }(), Forward)
	if len(a) != len(b) {
		t.Errorf("tp 1: %d ops sharded, %d replicated", len(a), len(b))
	}
}

// TestReplicatedEmbeddingParams: a TP-4 first stage of a 2-layer model
// (vocabulary 1000, hidden 64) holds a quarter of the embedding table
// (16,000 parameters) when it is vocabulary-parallel and all of it
// (64,000) when TP replicates it (MemoryInput.ReplicatedEmbedding); the
// layers are unchanged.
func TestReplicatedEmbeddingParams(t *testing.T) {
	m := Model{Layers: 2, Hidden: 64, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 1000, Activation: "swiglu", Norm: "rmsnorm"}
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 1, Seq: 128, Dtype: BF16, TP: 4, SP: true}, Layers: 2, HasEmbedding: true, PP: 1, DP: 1}
	sh := newSplit(m, in.Shape)
	sharded := in.params(sh, in.layerIDs())
	in.ReplicatedEmbedding = true
	repl := in.params(sh, in.layerIDs())
	if d := repl.dense - sharded.dense; d != 64000-16000 {
		t.Errorf("replicated embedding adds %g parameters per rank, want %d", d, 64000-16000)
	}
	if repl.maxLayer != sharded.maxLayer {
		t.Errorf("largest layer %g vs %g: the layers must not change", repl.maxLayer, sharded.maxLayer)
	}
}

// TestUnfusedNativeCrossEntropy prices F.cross_entropy on bf16 logits
// without the fp32 upcast, by hand: 256 tokens × vocabulary 1000 = 256,000
// logits of 2 bytes. Forward: log_softmax reads 512,000 B and writes
// 512,000 B + nll_loss's 12 B per token (3,072) = 515,072 B; backward:
// reads the dense gradient and the log-probabilities, 1,024,000 B + 4 B
// per token = 1,025,024 B, writes nll_loss's gradient and log_softmax's
// result, 1,024,000 B. No cast kernel; 8 bytes per logit at the peak
// against unfused's 12.
func TestUnfusedNativeCrossEntropy(t *testing.T) {
	m := Model{Layers: 2, Hidden: 64, Heads: 4, KVHeads: 4, FFN: 128, Vocab: 1000, Activation: "swiglu", Norm: "rmsnorm"}
	s := Shape{MicroBatch: 2, Seq: 128, Dtype: BF16, TP: 1, FlashAttention: true, CrossEntropy: CrossEntropyUnfusedNative}
	found := 0
	for _, p := range []Pass{Forward, Backward} {
		for _, o := range m.HeadOps(s, p) {
			switch o.Name {
			case "logits_to_fp32", "logits_to_fp32_bwd":
				t.Errorf("%s: unfused-native casts nothing", o.Name)
			case "cross_entropy":
				found++
				if o.BytesRead != 512000 || o.BytesWritten != 515072 {
					t.Errorf("forward: %g read, %g written, want 512000 and 515072", o.BytesRead, o.BytesWritten)
				}
			case "cross_entropy_bwd":
				found++
				if o.BytesRead != 1025024 || o.BytesWritten != 1024000 {
					t.Errorf("backward: %g read, %g written, want 1025024 and 1024000", o.BytesRead, o.BytesWritten)
				}
			}
		}
	}
	if found != 2 {
		t.Errorf("%d cross-entropy kernels, want 2", found)
	}
	if c, err := ParseCrossEntropy("unfused-native"); err != nil || c != CrossEntropyUnfusedNative || LossBytesPerLogit(c) != 8 {
		t.Errorf("parse %v %v, %g bytes per logit", c, err, LossBytesPerLogit(c))
	}
}
