package scenario

import "testing"

// TestModelDropout checks model.dropout: unset it is the preset's (Llama has
// none, GPT-3 has it), the megatron-deepspeed and megatron-lm profiles turn
// it on (Megatron's --attention-dropout/--hidden-dropout default 0.1, both
// codebases' arguments.py), an explicit value wins
// over the profile, and an unset field stays out of the run id.
func TestModelDropout(t *testing.T) {
	for _, c := range []struct {
		name string
		kv   []string
		want bool
	}{
		{"llama3-8b preset (none), unset", nil, false},
		{"gpt3 preset", []string{"model.preset", "gpt3-2.7b"}, true},
		{"preset, explicit false", []string{"model.preset", "gpt3-2.7b", "model.dropout", "false"}, false},
		{"explicit true", []string{"model.dropout", "true"}, true},
		{"megatron-deepspeed", []string{"training.framework", "megatron-deepspeed"}, true},
		{"megatron-deepspeed, explicit false", []string{"training.framework", "megatron-deepspeed", "model.dropout", "false"}, false},
		{"megatron-lm", []string{"training.framework", "megatron-lm"}, true},
		{"megatron-lm, explicit false (the MoE recipes)", []string{"training.framework", "megatron-lm", "model.dropout", "false"}, false},
		{"megatron-bridge (no documented default here)", []string{"training.framework", "megatron-bridge"}, false},
	} {
		p, err := parse(c.kv...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := p.Arch().Dropout; got != c.want {
			t.Errorf("%s: dropout %v, want %v", c.name, got, c.want)
		}
	}
	a, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	b, err := parse("model.dropout", "false")
	if err != nil {
		t.Fatal(err)
	}
	if a.RunID() == b.RunID() {
		t.Error("model.dropout: false has the unset file's run id; an explicit value is part of the configuration")
	}
	if a.Model.Dropout != nil {
		t.Error("unset model.dropout echoed into the canonical form (run ids of files without it would change)")
	}
}
