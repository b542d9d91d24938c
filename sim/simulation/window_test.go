package simulation

import "testing"

// TestAttentionWindowFields: model.attention_window and
// model.full_attention_every reach the model, change the run id only when
// set (0 is the default and stays out of the canonical form), shorten the
// step of a long-sequence model, and alternating layers land between all
// banded and none; bad values are one-line errors naming the field.
func TestAttentionWindowFields(t *testing.T) {
	long := []string{"training.seq_len", "16384", "parallel.tp", "1"}
	run := func(kv ...string) *Result { return runWith(t, long, kv...) }
	full, zero := run(), run("model.attention_window", "0")
	banded := run("model.attention_window", "1024")
	alt := run("model.attention_window", "1024", "model.full_attention_every", "2")
	if full.RunID != zero.RunID || full.RunID == banded.RunID || banded.RunID == alt.RunID {
		t.Errorf("run ids: full %s, explicit 0 %s, banded %s, alternating %s", full.RunID, zero.RunID, banded.RunID, alt.RunID)
	}
	if !(banded.StepTimeS < alt.StepTimeS && alt.StepTimeS < full.StepTimeS) {
		t.Errorf("step times: banded %v, alternating %v, full %v; want increasing", banded.StepTimeS, alt.StepTimeS, full.StepTimeS)
	}
	if !(banded.ModelFLOPsPerStep < alt.ModelFLOPsPerStep && alt.ModelFLOPsPerStep < full.ModelFLOPsPerStep) {
		t.Errorf("model FLOPs: banded %v, alternating %v, full %v", banded.ModelFLOPsPerStep, alt.ModelFLOPsPerStep, full.ModelFLOPsPerStep)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"model.attention_window", "-5"}, "model.attention_window: must be between 0"},
		{[]string{"model.full_attention_every", "2"}, "model.full_attention_every: 2 needs model.attention_window > 0"},
		{[]string{"model.attention_window", "128", "model.full_attention_every", "-1"}, "model.full_attention_every: must be between 0"},
	})
	oss := parseWith(t, nil, "model.preset", "gpt-oss-20b", "parallel.tp", "1", "parallel.ep", "8")
	if oss.Model.AttentionWindow != 128 || oss.Model.FullAttentionEvery != 2 {
		t.Errorf("gpt-oss-20b echoes window %d every %d", oss.Model.AttentionWindow, oss.Model.FullAttentionEvery)
	}
}
