package calibration

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Render rewrites a calibration file (data/calibration.yaml) with a fit's
// values: each fitted entry's value, the runs it was scored on and its
// objective there (runs by id: a scenario's name up to its first '-').
// Everything else is kept as it is.
func Render(file []byte, p *Problem, f Fit) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(file, &doc); err != nil {
		return nil, fmt.Errorf("calibration file: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("calibration file: not a mapping of entries")
	}
	root := doc.Content[0]
	for _, st := range f.Steps {
		for _, i := range st.Params {
			entry := lookup(root, p.Params[i].Name)
			if entry == nil {
				return nil, fmt.Errorf("calibration file: no entry %s", p.Params[i].Name)
			}
			set(entry, "value", scalar(f.Values[i]))
			runs := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, r := range st.Rows {
				id, _, _ := strings.Cut(p.Names[r], "-") // the run id (r024)
				runs.Content = append(runs.Content, scalar(id))
			}
			set(entry, "runs", runs)
			obj := "no row to fit it on: the prior"
			if len(st.Rows) > 0 {
				obj = fmt.Sprintf("mean |step-time error| %.2f%% over the %d rows of runs (simtrain calibrate)", 100*st.Objective, len(st.Rows))
			}
			set(entry, "objective", scalar(obj))
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return spaceEntries(buf.Bytes()), nil
}

// spaceEntries puts a blank line before every top-level entry but the
// first, as the file is written by hand (the encoder drops blank lines).
func spaceEntries(b []byte) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	var out bytes.Buffer
	seen := false
	for i, l := range lines {
		top := len(l) > 0 && l[0] != ' ' && l[0] != '#' && l[0] != '\n'
		if top && seen && i > 0 && len(bytes.TrimSpace(lines[i-1])) > 0 {
			out.WriteByte('\n')
		}
		seen = seen || top
		out.Write(l)
	}
	return out.Bytes()
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// lookup returns the value of key in mapping m, nil when absent.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set replaces key's value in mapping m, appending the key when absent.
func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}
