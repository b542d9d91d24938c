package hardware

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kind says where a figure comes from.
type Kind uint8

const (
	// Datasheet: the vendor's document, or a constant in the vendor's
	// software (NCCL's tuning tables).
	Datasheet Kind = iota + 1
	// Measured: a published measurement (Ref names it), or a ratio of one
	// to a datasheet figure.
	Measured
	// Fitted: chosen so that simulated runs or measurements match; the
	// value lives in the calibration table under Fit, with the runs it
	// was fitted on.
	Fitted
	// Derived: computed from other figures (Ref gives the formula).
	Derived
	// Estimate: an assumption with no measurement behind it, said as such.
	Estimate
	// Inherited: taken from the reference GPU of a record that names one
	// (GPURecord.Inherits) because nobody has measured this part.
	Inherited
)

var kindNames = [...]string{"", "datasheet", "measured", "fitted", "derived", "estimate", "inherited"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Source is a figure's provenance.
type Source struct {
	Kind Kind
	// Ref is the document, measurement or derivation the figure comes
	// from (for Fitted, how it was fitted).
	Ref string
	// Fit names the calibration entry a fitted figure takes its value
	// from (Calibration); refitting replaces the entry, not the record.
	Fit string
	// Times lists calibration entries the figure is multiplied by, in
	// order, to get the value the simulator uses: a kernel benchmark ×
	// the fitted share of it a training step sustains.
	Times []string
	// Runs lists what a calibration entry was fitted on: run ids of
	// scenarios/validation, or the measurement series.
	Runs []string
}

// Number is the kind of value a figure holds.
type Number interface {
	~float64 | ~int | ~bool | ~int64
}

// Figure is a value with its provenance. In a record file it is written
//
//	{value: 3.35e12, datasheet: "NVIDIA H100 datasheet"}
//	{value: 794.5/989, measured: "H100 MAMF (hardware-facts §4a)", times: [train_gemm]}
//	{fit: moe_host_sync}
//	{fit: nccl_ramp_time_h100, estimate: "no sweep for B200; H100's fit assumed"}
//
// — the value (a number, a product or quotient of decimal numbers,
// evaluated exactly and rounded once; a duration such as 500ns; true or
// false), and exactly one of datasheet, measured, derived, estimate (each
// with its reference) or fit (a calibration entry, whose value and source
// it takes; with an estimate saying why when the fit was made on another
// part).
type Figure[T Number] struct {
	Value T
	Source
}

// Set reports whether the figure was given (a zero figure means "not
// measured": the model then leaves that term out).
func (f Figure[T]) Set() bool { return f.Kind != 0 }

// UnmarshalYAML reads a figure.
func (f *Figure[T]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a figure needs its provenance, as {value: …, datasheet|measured|derived|estimate: \"source\"} or {fit: name}", n.Line)
	}
	var raw struct {
		Value                                                     *yaml.Node
		Datasheet, Measured, Derived, Estimate, Fitted, Inherited *string
		Fit                                                       string
		Times, Runs                                               []string
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		str := func(p **string) {
			var s string
			err = v.Decode(&s)
			*p = &s
		}
		switch k.Value {
		case "value":
			raw.Value = v
		case "datasheet":
			str(&raw.Datasheet)
		case "measured":
			str(&raw.Measured)
		case "derived":
			str(&raw.Derived)
		case "estimate":
			str(&raw.Estimate)
		case "fitted":
			str(&raw.Fitted)
		case "inherited":
			str(&raw.Inherited)
		case "fit":
			err = v.Decode(&raw.Fit)
		case "times":
			err = v.Decode(&raw.Times)
		case "runs":
			err = v.Decode(&raw.Runs)
		default:
			return fmt.Errorf("line %d: unknown figure key %q (valid: value, datasheet, measured, derived, estimate, fitted, fit, times, runs)", k.Line, k.Value)
		}
		if err != nil {
			return err
		}
	}
	var refs []string
	for _, c := range []struct {
		k Kind
		s *string
	}{{Datasheet, raw.Datasheet}, {Measured, raw.Measured}, {Derived, raw.Derived}, {Estimate, raw.Estimate}, {Fitted, raw.Fitted}, {Inherited, raw.Inherited}} {
		if c.s != nil {
			f.Kind, f.Ref = c.k, *c.s
			refs = append(refs, c.k.String())
		}
	}
	f.Fit, f.Times, f.Runs = raw.Fit, raw.Times, raw.Runs
	switch {
	case raw.Fit != "" && (raw.Value != nil || len(refs) > 1 || (len(refs) == 1 && f.Kind != Estimate)):
		return fmt.Errorf("line %d: a fitted figure {fit: %s} takes its value and source from the calibration table (an estimate: \"why\" may say why the fit applies here)", n.Line, raw.Fit)
	case raw.Fit != "":
		if len(refs) == 0 {
			f.Kind = Fitted
		}
		return nil
	case len(refs) != 1:
		return fmt.Errorf("line %d: a figure needs exactly one source (datasheet, measured, derived, estimate or fitted), has %d", n.Line, len(refs))
	case raw.Value == nil:
		return fmt.Errorf("line %d: a figure needs a value", n.Line)
	}
	return parseValue(raw.Value, &f.Value)
}

// MarshalYAML writes a figure in its record form (flow style, one line).
func (f Figure[T]) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	add := func(k string, v *yaml.Node) {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Style: yaml.DoubleQuotedStyle}
	}
	list := func(l []string) *yaml.Node {
		s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range l {
			s.Content = append(s.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: x})
		}
		return s
	}
	if f.Fit != "" {
		add("fit", &yaml.Node{Kind: yaml.ScalarNode, Value: f.Fit})
		if f.Kind == Estimate {
			add("estimate", str(f.Ref))
		}
		return n, nil
	}
	add("value", &yaml.Node{Kind: yaml.ScalarNode, Value: formatValue(f.Value)})
	if f.Kind != 0 {
		add(f.Kind.String(), str(f.Ref))
	}
	if len(f.Times) > 0 {
		add("times", list(f.Times))
	}
	if len(f.Runs) > 0 {
		add("runs", list(f.Runs))
	}
	return n, nil
}

// IsZero lets omitempty leave out a figure never given.
func (f Figure[T]) IsZero() bool { return f.Kind == 0 && f.Fit == "" }

var durationType = reflect.TypeFor[time.Duration]()

// parseValue reads a figure's value into v.
func parseValue[T Number](n *yaml.Node, v *T) error {
	rv := reflect.ValueOf(v).Elem()
	s := strings.TrimSpace(n.Value)
	switch {
	case rv.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("line %d: value %q: a duration such as 500ns or 2.75ms", n.Line, s)
		}
		rv.SetInt(int64(d))
	case rv.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("line %d: value %q: true or false", n.Line, s)
		}
		rv.SetBool(b)
	case rv.Kind() == reflect.Int || rv.Kind() == reflect.Int64:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: value %q: an integer", n.Line, s)
		}
		rv.SetInt(i)
	default:
		x, err := ParseNumber(s)
		if err != nil {
			return fmt.Errorf("line %d: value %q: %v", n.Line, s, err)
		}
		rv.SetFloat(x)
	}
	return nil
}

// formatValue writes a value so that reading it back gives the same bits.
func formatValue[T Number](v T) string {
	rv := reflect.ValueOf(v)
	switch {
	case rv.Type() == durationType:
		return time.Duration(rv.Int()).String()
	case rv.Kind() == reflect.Bool:
		return strconv.FormatBool(rv.Bool())
	case rv.Kind() == reflect.Int || rv.Kind() == reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	}
	return FormatNumber(rv.Float())
}

// ParseNumber reads a decimal number, or a product and quotient of them
// (794.5/989, 0.35*11.8879/7.4875), evaluated exactly and rounded once to
// the nearest float64 — as Go evaluates the same constant expression.
func ParseNumber(s string) (float64, error) {
	var acc *ratio
	op := byte('*')
	rest := s
	for {
		i := strings.IndexAny(rest, "*/")
		tok := strings.TrimSpace(rest)
		if i >= 0 {
			tok = strings.TrimSpace(rest[:i])
		}
		r, err := parseRatio(tok)
		if err != nil {
			return 0, err
		}
		switch {
		case acc == nil:
			acc = r
		case op == '*':
			acc.mul(r)
		default:
			if r.isZero() {
				return 0, errors.New("division by zero")
			}
			acc.quo(r)
		}
		if i < 0 {
			break
		}
		op, rest = rest[i], rest[i+1:]
	}
	return acc.float64(), nil
}

// FormatNumber writes x in the shortest form that reads back as x, with an
// exponent for large round values (80e9, 3.35e12, 989e12).
func FormatNumber(x float64) string {
	if x != 0 && (x >= 1e6 || x <= -1e6) {
		for _, e := range []int{15, 12, 9, 6} {
			m := x / pow10(e)
			if m < 1 && m > -1 {
				continue
			}
			s := strconv.FormatFloat(m, 'f', -1, 64)
			if len(s) <= 8 {
				if y, err := ParseNumber(s + "e" + strconv.Itoa(e)); err == nil && y == x {
					return s + "e" + strconv.Itoa(e)
				}
			}
		}
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func pow10(e int) float64 {
	p := 1.0
	for range e {
		p *= 10
	}
	return p
}

// ratio is an exact rational for ParseNumber.
type ratio struct{ r big.Rat }

func parseRatio(s string) (*ratio, error) {
	r := new(ratio)
	if s == "" || strings.ContainsAny(s, "/ ") {
		return nil, fmt.Errorf("not a number: %q", s)
	}
	if _, ok := r.r.SetString(s); !ok {
		return nil, fmt.Errorf("not a number: %q", s)
	}
	return r, nil
}

func (r *ratio) mul(o *ratio)     { r.r.Mul(&r.r, &o.r) }
func (r *ratio) quo(o *ratio)     { r.r.Quo(&r.r, &o.r) }
func (r *ratio) isZero() bool     { return r.r.Sign() == 0 }
func (r *ratio) float64() float64 { f, _ := r.r.Float64(); return f }
