// Package scenfile renders the scenario files the generators under tools/
// write (scenarios/validation, scenarios/holdout): the scenario format's own
// document with provenance comments, written in the layout of
// scenario.Encode, so that every generated file reads the same way and a new
// field needs no change here.
package scenfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/scenario"
)

// Scenario is a scenario file under construction: the document, in the
// scenario format's own types (scenario.Scenario; zero values are left out
// of the file, so the simulator's documented defaults apply), plus the
// comment lines that say where every value comes from.
type Scenario struct {
	scenario.Scenario
	Header []string // comment lines: provenance
	Facts  []string // comment lines: configuration taken from the source
	Notes  []string // assumptions, listed in the header and joined into expect.notes
}

// BP returns a pointer to b, for the optional boolean fields.
func BP(b bool) *bool { return &b }

// Assume records an assumption: it is listed in the header and joined into
// expect.notes.
func (s *Scenario) Assume(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// Exp returns the expect: block, creating it.
func (s *Scenario) Exp() *scenario.Expect {
	if s.Expect == nil {
		s.Expect = &scenario.Expect{}
	}
	return s.Expect
}

// Measured sets the published figure: metric is an expect: key
// (step_time_s, tokens_per_s_per_gpu, mfu or tflops_per_gpu).
func (s *Scenario) Measured(metric string, v float64) {
	e := s.Exp()
	p := map[string]**float64{scenario.MetricStepTime: &e.StepTimeS, scenario.MetricTokens: &e.TokensPerSPerGPU,
		scenario.MetricMFU: &e.MFU, scenario.MetricTFLOPs: &e.TFLOPsPerGPU}[metric]
	if p == nil {
		panic("scenfile: unknown metric " + metric)
	}
	*p = &v
}

// MoE returns the model.moe block, creating it.
func (s *Scenario) MoE() *scenario.MoEConfig {
	if s.Model.MoE == nil {
		s.Model.MoE = &scenario.MoEConfig{}
	}
	return s.Model.MoE
}

// YAML renders the scenario: the header, facts and assumptions as comment
// lines, then the document as scenario.Encode writes it (the registry's
// field order), with the assumptions joined into expect.notes.
func (s *Scenario) YAML() []byte {
	var b bytes.Buffer
	lines := append([]string(nil), s.Header...)
	if len(s.Facts) > 0 {
		lines = append(lines, "")
		lines = append(lines, s.Facts...)
	}
	if len(s.Notes) > 0 {
		lines = append(lines, "", "Assumptions (not stated by the source):")
		for _, n := range s.Notes {
			lines = append(lines, "- "+n)
		}
	}
	for _, h := range lines {
		if h == "" {
			b.WriteString("#\n")
			continue
		}
		fmt.Fprintf(&b, "# %s\n", h)
	}
	doc := s.Scenario
	if len(s.Notes) > 0 {
		e := *s.Exp()
		e.Notes = strings.Join(s.Notes, "; ")
		doc.Expect = &e
	}
	b.Write(scenario.Encode(&doc))
	return b.Bytes()
}

// Quote quotes a string for YAML (a JSON string is a YAML double-quoted
// scalar).
func Quote(s string) string { return strconv.Quote(s) }

// Slug makes a file-name fragment of s: lower case letters, digits and '.',
// with one '-' for every run of other characters, none at either end.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.':
			b.WriteRune(c)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
