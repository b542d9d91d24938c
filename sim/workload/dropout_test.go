package workload

import "testing"

// TestDropoutKernels checks by hand the dropout kernels of one GPT layer
// (hidden 768, 12 heads, fp16, micro-batch 2, sequence 2048, TP 2 without
// sequence parallelism: 4,096 tokens per rank). With Model.Dropout the
// forward gains the attention-output and MLP-output dropouts, each reading
// the 4096·768 fp16 activations and writing them plus a one-byte mask, and,
// with unfused attention, the dropout of the 6 local heads' 2048×2048
// probabilities per sequence; FlashAttention drops inside its kernel (no
// separate op). Without Model.Dropout there is none.
func TestDropoutKernels(t *testing.T) {
	m := Model{Name: "gpt", Layers: 12, Hidden: 768, Heads: 12, FFN: 3072, Vocab: 50432,
		Activation: "gelu", Norm: "layernorm", MaxPositions: 2048, Dropout: true}
	m.Fill()
	hidden := 4096.0 * 768
	probs := 2 * 6 * 2048.0 * 2048
	for _, c := range []struct {
		name  string
		flash bool
		want  map[string]float64 // op → elements
	}{
		{"flash", true, map[string]float64{"attn_out_dropout": hidden, "mlp_dropout": hidden}},
		{"unfused", false, map[string]float64{"attn_dropout": probs, "attn_out_dropout": hidden, "mlp_dropout": hidden}},
	} {
		s := Shape{MicroBatch: 2, Seq: 2048, Dtype: FP16, TP: 2, FlashAttention: c.flash}
		got := map[string]bool{}
		for _, o := range m.LayerOps(0, s, Forward) {
			e, ok := c.want[o.Name]
			if !ok {
				continue
			}
			got[o.Name] = true
			if o.BytesRead != 2*e || o.BytesWritten != 3*e {
				t.Errorf("%s %s: read %g written %g, want %g and %g (fp16 in, fp16 out + 1-byte mask)", c.name, o.Name, o.BytesRead, o.BytesWritten, 2*e, 3*e)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: dropout ops %v, want %v", c.name, got, c.want)
		}
	}
	m.Dropout = false
	for _, o := range m.LayerOps(0, Shape{MicroBatch: 2, Seq: 2048, Dtype: FP16, TP: 2}, Forward) {
		if o.Name == "attn_dropout" || o.Name == "attn_out_dropout" || o.Name == "mlp_dropout" {
			t.Errorf("no dropout: got %s", o.Name)
		}
	}
}
