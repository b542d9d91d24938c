package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/limits"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// Sweep is a loaded, validated and enumerated sweep file. It is immutable
// after loading but for the plans loading kept, which Point takes
// atomically; Point and Evaluate may be called from many goroutines.
type Sweep struct {
	// Name is the sweep's name; point i is named Name-i (zero-padded).
	Name        string
	Description string
	// Base is the base scenario's path as given in the file ("" for an
	// inline scenario).
	Base string
	// Fields are the swept fields in file order.
	Fields []Field
	// Duplicates counts combinations dropped because they repeat an earlier
	// point's configuration; DuplicateExample describes the first one.
	Duplicates       int
	DuplicateExample string

	base *yaml.Node // root mapping of the base scenario, name set to Name
	// tmpl is base decoded once: a point whose values it can set as typed
	// fields is resolved from a copy of it, not by editing and decoding
	// the YAML (nil: every point goes through the YAML).
	tmpl   *scenario.Template
	points []sweepPoint
	// plans[i] is point i's plan as loading resolved it, until Point
	// takes it (then nil): the first retainPlans points are not resolved
	// a second time to be run (see retainPlans).
	plans    []atomic.Pointer[scenario.Plan]
	fidelity *network.Fidelity
	dir      string // where the base scenario lives: relative cluster.gpu files are read from it
	budget   simulation.Budget
	ctx      context.Context
	width    int // digits of the point number in names
	// cutoff, when set, is each point's simulation.Options.StepCutoffS
	// (SetCutoff).
	cutoff func(*scenario.Plan) float64
	pool   *Pool // the workers' storage kept between Runs (SetPool); nil: made for each Run
	// everyRank is set when some valid point plays every rank (flow
	// fidelity): PlaysEveryRank.
	everyRank bool
}

// PlaysEveryRank reports whether some valid point of the sweep plays every
// rank (sim.fidelity flow), whose plays make hundreds of megabytes of
// garbage where a representative-rank play makes kilobytes: what a
// caller sizes the collector's pace by.
func (sw *Sweep) PlaysEveryRank() bool { return sw.everyRank }

// SetPool has the sweep's Runs take their workers' storage from p and
// leave it there for the next Run (of this sweep or another given p).
func (sw *Sweep) SetPool(p *Pool) { sw.pool = p }

// SetCutoff has every point evaluated from now on built with
// simulation.Options.StepCutoffS = cutoff(its plan) (0: none): a point
// shown to be slower (by its computation alone, or as it plays) is then
// Simulated with its Result RuledOut, not played to its end. Set it before
// a Run, not during one.
func (sw *Sweep) SetCutoff(cutoff func(*scenario.Plan) float64) { sw.cutoff = cutoff }

// Field is one swept field.
type Field struct {
	Path string // dotted scenario field, e.g. "parallel.tp"
	// Auto is true for `auto`: every candidate value that gives a valid
	// scenario (see AutoFields), optionally bounded by Min/Max.
	Auto     bool
	Min, Max *int
	// Values are the listed values as written (nil when Auto).
	Values []string

	nodes []*yaml.Node
	knob  *scenario.Knob
	// typed[i] is nodes[i] decoded for the template, ok[i] false where it
	// must go through the YAML (scenario.Template.Value).
	typed []scenario.Value
	ok    []bool
}

type sweepPoint struct {
	vals  []*yaml.Node // one per field
	runID string
	err   string // "" when the point is a valid scenario
	// key is the point's structure key (simulation.FirstBuildKey of the
	// plan loading resolved, kept or not, as a worker runs it: its first
	// build's, shortened or not), keyed whether it has one;
	// byStructure orders by it.
	key   uint64
	keyed bool
	// work is the point's largest program size (simulation.EstimateWork's
	// ProgramTasks of the plan loading resolved, kept or not; 0 for an
	// invalid point), for largestWork.
	work int64
}

// Options adjust how a sweep is loaded.
type Options struct {
	// Fidelity overrides sim.fidelity of every point (and so their run ids).
	// It is an error for a sweep that varies sim.fidelity itself.
	Fidelity *network.Fidelity
	// Budget bounds each point's simulation (Options.Budget); a point
	// above it is Failed with the budget's error.
	Budget simulation.Budget
	// Context, when set, cancels the enumeration of a large sweep.
	Context context.Context
	// Overrides set fields of the base scenario (--set) before the points
	// are enumerated, so they change every point and its run id. Overriding
	// a field the sweep varies is an error.
	Overrides []scenario.Override
}

// sweepKeys are the top-level keys of a sweep file.
var sweepKeys = []string{"name", "description", "base", "scenario", "sweep"}

// Load reads a sweep file; a base: path is resolved against the file's
// directory.
func Load(path string, opt Options) (*Sweep, error) {
	data, err := limits.ReadFile(path, limits.MaxInputBytes)
	if err != nil {
		return nil, err
	}
	sw, err := Parse(data, filepath.Dir(path), opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sw, nil
}

// Parse decodes, checks and enumerates a sweep document; dir resolves
// a relative base: path. Errors are one line and name the key or field.
func Parse(data []byte, dir string, opt Options) (*Sweep, error) {
	// The hardware catalog loads beside the decoding (warmCatalog).
	if warmBaseOn {
		go warmCatalog()
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a YAML sweep file: %w", scenario.YAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("the file holds more than one YAML document; a sweep is one document")
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("a sweep file is a mapping with base: (or scenario:) and sweep:")
	}
	root := doc.Content[0]
	sw := &Sweep{fidelity: opt.Fidelity, budget: opt.Budget, ctx: opt.Context}
	var scenarioNode, sweepNode *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, fmt.Errorf("%s: given twice (line %d)", k.Value, k.Line)
		}
		seen[k.Value] = true
		if !slices.Contains(sweepKeys, k.Value) {
			return nil, fmt.Errorf("%s: unknown key (line %d); %s", k.Value, k.Line, scenario.Suggest(k.Value, sweepKeys))
		}
		switch k.Value {
		case "name", "description", "base":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return nil, fmt.Errorf("%s: expected a single value, got %s (line %d)", k.Value, scenario.DescribeNode(v), v.Line)
			}
			switch k.Value {
			case "name":
				sw.Name = v.Value
			case "description":
				sw.Description = v.Value
			case "base":
				sw.Base = v.Value
			}
		case "scenario":
			scenarioNode = v
		case "sweep":
			sweepNode = v
		}
	}
	base, err := sw.loadBase(scenarioNode, dir)
	if err != nil {
		return nil, err
	}
	sw.base = base
	// Resolve a copy of the base on another goroutine (warmBase) while
	// this one parses the fields, builds the template and the first
	// batch of combinations.
	if warmBaseOn {
		go warmBase(scenario.CloneNode(base), sw.dir, sw.Name)
	}
	if sweepNode == nil {
		return nil, errors.New("sweep: required (a mapping of dotted field → list of values or auto)")
	}
	if err := sw.parseFields(sweepNode); err != nil {
		return nil, err
	}
	for _, o := range opt.Overrides {
		for _, f := range sw.Fields {
			if f.Path == o.Path {
				return nil, fmt.Errorf("sweep: %s: the sweep varies it, so --set %s=%s cannot apply (edit its values in the sweep file instead)", o.Path, o.Path, o.Value)
			}
		}
		if err := o.Apply(sw.base); err != nil {
			return nil, err
		}
	}
	if opt.Fidelity != nil {
		for _, f := range sw.Fields {
			if f.Path == "sim.fidelity" {
				return nil, errors.New("sweep: sim.fidelity: the sweep varies it, so the fidelity override (--fidelity) cannot apply")
			}
		}
		// Every point runs at the override's fidelity, so the base
		// carries it.
		v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: opt.Fidelity.String()}
		if err := scenario.SetFieldPath(sw.base, "sim.fidelity", v); err != nil {
			return nil, err
		}
	}
	if err := sw.checkSize(); err != nil {
		return nil, err
	}
	sw.tmpl = scenario.NewTemplate(sw.base, sw.dir)
	for fi := range sw.Fields {
		f := &sw.Fields[fi]
		for _, n := range f.nodes {
			v, ok := sw.tmpl.Value(f.knob, n)
			f.typed, f.ok = append(f.typed, v), append(f.ok, ok)
		}
	}
	if err := sw.enumerate(); err != nil {
		return nil, err
	}
	if err := limits.CheckName("name", sw.PointName(sw.Len()-1)); err != nil {
		return nil, fmt.Errorf("%w (the points are named %s)", err, sw.PointName(0))
	}
	return sw, nil
}

// warmBase resolves the base scenario doc and drops the plan. It is run
// for its side effects alone: caches filled once per process that hold
// the same value (or error) whichever goroutine fills them first, chiefly
// the hardware catalog's shared tables and the GPU and NIC records the
// base names (sync.OnceValues in sim/hardware; 2–7 ms of one CPU in a
// fresh process, measured alone on a busy machine). Without it the first
// point resolved loads them while every other goroutine of the load
// waits; begun as soon as the base is read, it runs on a CPU that idles
// until the first batch, so the batch waits for less of it. The base it
// resolves is a copy taken before any --set or --fidelity override: with
// one that changes the GPU it loads a record no point uses, on a CPU that
// had nothing else to do. Nothing a sweep loads, runs or writes depends
// on it (every point is resolved on its own and reports its own error;
// TestWarmBaseChangesNothing), and a panic here (a defective embedded
// catalog) is left to the point that meets it, as without it.
func warmBase(doc *yaml.Node, dir, name string) {
	if warmBaseDone != nil {
		defer func() { warmBaseDone <- doc }()
	}
	defer func() { _ = recover() }()
	_, _ = scenario.ParsePartial(doc, dir, name)
}

// warmCatalog loads the hardware catalog's shared tables, the part of
// what warmBase warms that needs no base: started as Parse begins, it
// overlaps the sweep file's and the base's decoding too, and warmBase
// then waits for it before it reads the GPU and NIC records. Like
// warmBase it only fills a cache (sync.OnceValues) that holds the same
// tables whoever fills it first, and leaves a panic to the caller that
// meets it.
func warmCatalog() {
	defer func() { _ = recover() }()
	scenario.LoadCatalog()
}

// warmBaseOn says whether Parse starts warmCatalog and warmBase, and
// warmBaseDone, when set, receives each warmBase's doc once it has
// finished (both for tests).
var (
	warmBaseOn   = true
	warmBaseDone chan *yaml.Node
)

// loadBase returns the base scenario's root mapping, checked against the
// scenario format (unknown keys and wrong types are errors here), with its
// name set to the sweep's name.
func (sw *Sweep) loadBase(inline *yaml.Node, dir string) (*yaml.Node, error) {
	var root *yaml.Node
	where := "scenario"
	switch {
	case inline != nil && sw.Base != "":
		return nil, errors.New("base, scenario: give exactly one (a base scenario file or an inline scenario), not both")
	case inline != nil:
		root = inline
		sw.dir = dir
	case sw.Base != "":
		path := sw.Base
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		sw.dir = filepath.Dir(path)
		where = "base " + sw.Base
		data, err := limits.ReadFile(path, limits.MaxInputBytes)
		if err != nil {
			return nil, fmt.Errorf("base: %w", err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: not a YAML scenario: %w", where, scenario.YAMLError(err))
		}
		if len(doc.Content) == 0 {
			return nil, fmt.Errorf("%s: empty scenario", where)
		}
		root = doc.Content[0]
	default:
		return nil, errors.New("base: required (a scenario file relative to the sweep file), or an inline scenario: mapping")
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: expected a mapping of fields, got %s (line %d)", where, scenario.DescribeNode(root), root.Line)
	}
	root = scenario.CloneNode(root)
	if err := scenario.CheckDocument(root); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if sw.Name == "" {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "name" {
				sw.Name = root.Content[i+1].Value
			}
		}
		if sw.Name == "" {
			return nil, errors.New("name: required (neither the sweep nor its base scenario has a name)")
		}
	}
	if err := limits.CheckName("name", sw.Name); err != nil {
		return nil, err
	}
	if err := scenario.SetFieldPath(root, "name", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: sw.Name}); err != nil {
		return nil, err
	}
	return root, nil
}

// parseFields reads the sweep: mapping and checks every field and value.
func (sw *Sweep) parseFields(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return fmt.Errorf("sweep: expected a mapping of dotted field → list of values or auto, got %s (line %d)", describeOrEmpty(n), n.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := k.Value
		if seen[path] {
			return fmt.Errorf("sweep: %s: given twice (line %d)", path, k.Line)
		}
		seen[path] = true
		f, err := parseField(path, v)
		if err != nil {
			return fmt.Errorf("sweep: %w (line %d)", err, v.Line)
		}
		sw.Fields = append(sw.Fields, f)
	}
	return nil
}

// nodeValue is a sweep value as written in the point's values and
// summary.arrow: a scalar's text, or a list of scalars in flow style.
func nodeValue(v *yaml.Node) string {
	if v.Kind != yaml.SequenceNode {
		return v.Value
	}
	items := make([]string, len(v.Content))
	for i, e := range v.Content {
		items[i] = e.Value
	}
	return "[" + strings.Join(items, ", ") + "]"
}

func parseField(path string, v *yaml.Node) (Field, error) {
	f := Field{Path: path}
	k, err := scenario.Lookup(path)
	if err != nil && (path == "expect" || strings.HasPrefix(path, "expect.")) {
		k, err = scenario.Lookup("expect.source") // every expect field has its reason
	}
	if err != nil {
		return f, err
	}
	if k.NotSwept != "" {
		return f, fmt.Errorf("%s: cannot be swept: %s", path, k.NotSwept)
	}
	f.knob = k
	switch {
	case v.Kind == yaml.ScalarNode && v.Value == "auto" && v.Tag == "!!str":
		f.Auto = true
	case v.Kind == yaml.MappingNode:
		if err := parseAutoSpec(&f, v); err != nil {
			return f, err
		}
	case v.Kind == yaml.SequenceNode:
		if len(v.Content) == 0 {
			return f, fmt.Errorf("%s: empty list; give at least one value, or auto", path)
		}
		for i, c := range v.Content {
			c = scenario.CloneNode(c)
			ip := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case c.Kind == yaml.SequenceNode && k.IsList():
				// a list-valued field (training.recompute_modules,
				// training.offload_modules): each value is one list
				for _, e := range c.Content {
					if e.Kind != yaml.ScalarNode {
						return f, fmt.Errorf("%s: expected a list of single values, got %s inside", ip, scenario.DescribeNode(e))
					}
				}
				c.Style = yaml.FlowStyle
			case c.Kind != yaml.ScalarNode:
				return f, fmt.Errorf("%s: expected a single value, got %s", ip, scenario.DescribeNode(c))
			}
			if err := scenario.CheckValue(path, ip, c); err != nil {
				return f, stripLine(err)
			}
			value := nodeValue(c)
			if c.Kind == yaml.ScalarNode && c.Tag != "!!null" && !k.Valid(c.Value) {
				return f, fmt.Errorf("%s: unknown value %q (valid: %s)", ip, c.Value, strings.Join(k.Choices(), ", "))
			}
			for j, prev := range f.nodes {
				if prev.Tag == c.Tag && f.Values[j] == value {
					return f, fmt.Errorf("%s: %q is listed twice (also %s[%d])", ip, value, path, j)
				}
			}
			f.nodes = append(f.nodes, c)
			f.Values = append(f.Values, value)
		}
		return f, nil
	default:
		hint := ""
		if v.Kind == yaml.ScalarNode {
			hint = fmt.Sprintf(" (for one value write [%s])", v.Value)
		}
		return f, fmt.Errorf("%s: expected a list of values or auto, got %s%s", path, scenario.DescribeNode(v), hint)
	}
	if !k.SupportsAuto() {
		return f, fmt.Errorf("%s: auto is not supported for this field (supported: %s); list the values", path, strings.Join(scenario.AutoFields(), ", "))
	}
	if (f.Min != nil || f.Max != nil) && k.Auto == nil {
		return f, fmt.Errorf("%s: min and max apply only to integer fields", path)
	}
	return f, nil
}

// parseAutoSpec reads {auto: true, min: N, max: N}.
func parseAutoSpec(f *Field, v *yaml.Node) error {
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i].Value, v.Content[i+1]
		switch k {
		case "auto":
			if val.Tag != "!!bool" || val.Value != "true" {
				return fmt.Errorf("%s.auto: expected true, got %s", f.Path, scenario.DescribeNode(val))
			}
			f.Auto = true
		case "min", "max":
			if val.Tag != "!!int" {
				return fmt.Errorf("%s.%s: expected an integer, got %s", f.Path, k, scenario.DescribeNode(val))
			}
			n, err := strconv.Atoi(val.Value)
			if err != nil {
				return fmt.Errorf("%s.%s: expected an integer, got %s", f.Path, k, scenario.DescribeNode(val))
			}
			if k == "min" {
				f.Min = &n
			} else {
				f.Max = &n
			}
		default:
			return fmt.Errorf("%s.%s: unknown key (valid: auto, min, max)", f.Path, k)
		}
	}
	if !f.Auto {
		return fmt.Errorf("%s: a mapping here must say auto: true (or give a list of values)", f.Path)
	}
	if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
		return fmt.Errorf("%s: min %d is above max %d", f.Path, *f.Min, *f.Max)
	}
	return nil
}

// enumerate fills sw.points.
func (sw *Sweep) enumerate() error {
	var listed, autos []int
	for i, f := range sw.Fields {
		if f.Auto {
			autos = append(autos, i)
		} else {
			listed = append(listed, i)
		}
	}
	// The listed combinations, as many as there are points without auto
	// fields: the run ids' table and the points are sized for them (up to
	// a bound) rather than grown and rehashed as they fill.
	combos := 1
	for _, fi := range listed {
		combos = min(combos*len(sw.Fields[fi].nodes), maxPresized)
	}
	seen := make(map[string]int, combos)
	sw.points = make([]sweepPoint, 0, combos)
	vals := make([]*yaml.Node, len(sw.Fields))
	// addID records the point with values vals, run id id and validity
	// err, unless an earlier point has the same configuration.
	// vals is the point's own (not the enumeration's working slice).
	addID := func(vals []*yaml.Node, id string, err error, plan *scenario.Plan) {
		if j, dup := seen[id]; dup {
			if sw.Duplicates == 0 {
				sw.DuplicateExample = fmt.Sprintf("%s is the same configuration as %s", sw.describe(vals), sw.describe(sw.points[j].vals))
			}
			sw.Duplicates++
			return
		}
		seen[id] = len(sw.points)
		p := sweepPoint{vals: vals, runID: id}
		if err != nil {
			p.err = err.Error()
		}
		if plan != nil && len(sw.points) < retainPlans {
			if sw.plans == nil {
				sw.plans = make([]atomic.Pointer[scenario.Plan], retainPlans)
			}
			sw.plans[len(sw.points)].Store(plan)
		}
		sw.points = append(sw.points, p)
	}
	// A point with an auto field keeps no plan: Point sets its values on
	// the base in another order than autoRec does. It keeps the plan's
	// structure key, for byStructure (≈ 9 k instructions a valid point).
	var scratch simulation.KeyScratch
	add := func(s *scenario.Plan, err error) {
		n := len(sw.points)
		addID(slices.Clone(vals), s.RunID(), err, nil)
		if err == nil && len(sw.points) > n {
			p := &sw.points[n]
			p.key, p.keyed = simulation.FirstBuildKey(s, workerOptions, &scratch)
			p.work = simulation.EstimateProgramTasks(s, simulation.Options{})
			sw.everyRank = sw.everyRank || s.Fidelity() == network.Flow
		}
	}
	// Without auto fields every combination is one document: they are
	// resolved, hashed and keyed in batches on every CPU (most of
	// loading), and recorded in order.
	var batch []pendingPoint
	// The batch's storage, reused or shared (see pointBatch): its points'
	// template values, rewritten by every batch; the values each point
	// keeps, and the plans the template resolves into, one allocation per
	// batch for all of its points.
	var tvs []scenario.Value
	var keptVals []*yaml.Node
	// Each of parsePoints' goroutines keys its points with a scratch of
	// its own, kept from batch to batch: its memo of the first steady
	// play per pipeline shape (simulation.KeyScratch) is then made once
	// per shape and goroutine, not once per batch.
	var scratches []*simulation.KeyScratch
	nf := len(sw.Fields)
	flush := func() {
		// The batch's plans (≈ 1.5 KB each) are mapped before the
		// template writes them (hugepages.PopulateUpTo, by parsePoints'
		// workers, a part each): faulted in page by page they were ≈ 370
		// of the 1,000-point 70B sweep's page faults, each costing this
		// VM several times the batched mapping (load-only `sweep
		// --print-point 0`: −3.4±1.6 ms CPU).
		var plans, room []scenario.Plan
		for i := range batch {
			if batch[i].doc == nil {
				if plans == nil {
					plans = make([]scenario.Plan, len(batch)-i)
					room = plans
				}
				batch[i].into = &plans[0]
				plans = plans[1:]
			}
		}
		parsePoints(batch, sw.parsePending, &scratches, planBytes(room))
		for _, b := range batch {
			n := len(sw.points)
			addID(b.vals, b.id, b.err, b.plan)
			if len(sw.points) > n {
				sw.points[n].key, sw.points[n].keyed, sw.points[n].work = b.key, b.keyed, b.work
				if b.err == nil && b.plan != nil {
					sw.everyRank = sw.everyRank || b.plan.Fidelity() == network.Flow
				}
			}
		}
		batch = batch[:0]
	}
	idx := make([]int, len(listed))
	for {
		typed := len(autos) == 0
		for k, fi := range listed {
			vals[fi] = sw.Fields[fi].nodes[idx[k]]
			typed = typed && sw.Fields[fi].ok[idx[k]]
		}
		var doc *yaml.Node
		if !typed {
			doc = scenario.CloneNode(sw.base)
			for _, fi := range listed {
				if err := sw.Fields[fi].knob.Set(doc, scenario.CloneNode(vals[fi])); err != nil {
					return err
				}
			}
		}
		if len(autos) == 0 {
			if len(keptVals) < nf {
				keptVals = make([]*yaml.Node, pointBatch*nf)
			}
			b := pendingPoint{doc: doc, vals: keptVals[:nf:nf]}
			copy(b.vals, vals)
			keptVals = keptVals[nf:]
			if typed && sw.tmpl != nil {
				// The template's values by index: typedValues would find
				// each value among its field's by a search.
				if tvs == nil {
					tvs = make([]scenario.Value, pointBatch*nf)
				}
				b.tv = tvs[len(batch)*nf : (len(batch)+1)*nf : (len(batch)+1)*nf]
				clear(b.tv)
				for k, fi := range listed {
					b.tv[fi] = sw.Fields[fi].typed[idx[k]]
				}
			}
			batch = append(batch, b)
			if len(batch) == pointBatch {
				flush()
			}
		} else {
			var firstErr error
			found := false
			sw.autoRec(doc, autos, vals, func(s *scenario.Plan, err error) {
				if err == nil {
					found = true
					add(s, nil)
				} else if firstErr == nil {
					firstErr = err
				}
			})
			if !found {
				// Never drop a combination silently: record it once, with
				// the auto fields at the base's values, as an error.
				for _, fi := range autos {
					vals[fi] = nil
				}
				s, _ := sw.parsePoint(doc)
				if firstErr == nil {
					firstErr = errors.New("no candidate value within min and max")
				}
				var names []string
				for _, fi := range autos {
					names = append(names, sw.Fields[fi].Path)
				}
				add(s, fmt.Errorf("%s (auto): no value gives a valid scenario; first error: %v", strings.Join(names, ", "), firstErr))
			}
		}
		if err := sw.checkProgress(); err != nil {
			return err
		}
		// Odometer: the last listed field turns fastest.
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(sw.Fields[listed[k]].nodes) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	if len(batch) > 0 {
		flush()
	}
	if err := sw.checkProgress(); err != nil {
		return err
	}
	if len(sw.points) == 0 {
		return errors.New("sweep: no points")
	}
	if len(sw.plans) > len(sw.points) {
		sw.plans = sw.plans[:len(sw.points):len(sw.points)]
	}
	allBad := true
	for _, p := range sw.points {
		if p.err == "" {
			allBad = false
			break
		}
	}
	if allBad {
		return fmt.Errorf("sweep: every point is invalid; the first: %s", sw.points[0].err)
	}
	sw.width = len(strconv.Itoa(len(sw.points) - 1))
	return nil
}

// maxPresized bounds how many points enumerate sizes its tables for
// before it knows how many there are.
const maxPresized = 1 << 16

// pointBatch is how many documents enumerate resolves at once: enough to
// keep every CPU busy, few enough that their trees stay small.
const pointBatch = 256

// retainPlans is how many points (the first ones) keep the plan loading
// resolved for Point to use once, instead of resolving it again to run
// it (the second resolve was ≈ 8% of a sweep's CPU). A kept plan holds
// ≈ 4 KB (measured: the 70B sweep's heap after loading, 4.9 MB with its
// 1,000 plans, 0.7 MB without; the GPU record is shared), so this bounds
// what a sweep holds for them to ≈ 17 MB whatever its size (up to
// 1,048,576 points); points past it are resolved again.
var retainPlans = 4096 // a variable for tests

// pendingPoint is a combination waiting to be resolved: its values and
// its document (nil when the template sets its values, tv), then its run
// id, validity and plan.
type pendingPoint struct {
	doc  *yaml.Node
	vals []*yaml.Node
	tv   []scenario.Value // the template's values, by field (doc nil)
	// into, when not nil, is where the template resolves the plan (doc
	// nil): storage shared with the batch's other points (enumerate).
	into *scenario.Plan
	id   string
	err  error
	plan *scenario.Plan
	// key is plan's first build's structure key (simulation.FirstBuildKey), keyed whether it has one
	// (none for an invalid plan).
	key   uint64
	keyed bool
	work  int64 // the plan's simulation.EstimateWork ProgramTasks (valid plans)
}

// parsePoints resolves every batch entry with parse, hashes it for its
// run id and, when valid, computes its structure key (byStructure's, here
// so that the keys are made on every CPU, not before Run's workers start),
// on up to GOMAXPROCS goroutines (each entry is independent; the caller
// records them in order, so the points, their numbers and which
// duplicates are dropped do not depend on the CPUs). The calling
// goroutine is worker 0 and starts one goroutine for each other worker:
// a goroutine starts on a 2 KB stack that is copied, frames and all, each
// time a resolve goes deeper, while the caller's has grown already (the
// 70B sweep's load-only process: 31 → 17 stack growths). Worker w keys
// with (*scratches)[w], made when missing and kept for the next batch (a
// scratch only memoises what a key reads, so which points met it before
// changes no key).
//
// Before its first entry, worker w maps its part of room (the batch's
// plan storage, split at page boundaries: pagePart) in one call
// (hugepages.PopulateUpTo), so that the storage is mapped on every CPU
// rather than by the caller before the workers start (the 70B sweep's
// 367 pages were the load's largest serial item; docs/design.md "Speed",
// serial53). The parts together map the whole pages inside room, as one
// call over it would; a worker that reaches another's part before that
// part is mapped only faults there as before.
func parsePoints(batch []pendingPoint, parse func(*pendingPoint) (*scenario.Plan, error), scratches *[]*simulation.KeyScratch, room []byte) {
	one := func(b *pendingPoint, scratch *simulation.KeyScratch) {
		s, err := parse(b)
		b.id, b.err, b.doc, b.plan = s.RunID(), err, nil, s
		if err == nil {
			b.key, b.keyed = simulation.FirstBuildKey(s, workerOptions, scratch)
			b.work = simulation.EstimateProgramTasks(s, simulation.Options{})
		}
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(batch)))
	for len(*scratches) < workers {
		*scratches = append(*scratches, new(simulation.KeyScratch))
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(room)))
	page := hugepages.PageSize()
	mapPart := func(w int) {
		if lo, hi := pagePart(base, len(room), workers, w, page); hi > lo {
			hugepages.PopulateUpTo(room[lo:hi])
		}
	}
	if workers == 1 {
		mapPart(0)
		scratch := (*scratches)[0]
		for i := range batch {
			one(&batch[i], scratch)
		}
		return
	}
	var next atomic.Int64
	work := func(w int, scratch *simulation.KeyScratch) {
		mapPart(w)
		for {
			i := int(next.Add(1)) - 1
			if i >= len(batch) {
				return
			}
			one(&batch[i], scratch)
		}
	}
	// The caller is worker 0: it would only wait (see the doc comment).
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		scratch := (*scratches)[w]
		go func() {
			defer wg.Done()
			work(w, scratch)
		}()
	}
	work(0, (*scratches)[0])
	wg.Wait()
}

// pagePart is part w of parts of an array of n bytes at address base, as
// byte offsets [lo, hi): the parts follow each other from 0 to n, each
// about n/parts bytes, and every cut between two parts is at a page
// boundary, so that the whole pages inside the parts are the whole pages
// inside the array.
func pagePart(base uintptr, n, parts, w, page int) (lo, hi int) {
	cut := func(k int) int {
		if k <= 0 {
			return 0
		}
		if k >= parts {
			return n
		}
		p := uintptr(page)
		a := (base + uintptr(k*n/parts) + p - 1) &^ (p - 1)
		return min(int(a-base), n)
	}
	return cut(w), cut(w + 1)
}

// planBytes is the memory under plans, as bytes (nil for none).
func planBytes(plans []scenario.Plan) []byte {
	if len(plans) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(plans))), len(plans)*int(unsafe.Sizeof(plans[0])))
}

// autoRec enumerates the auto fields autos[0], autos[1], … depth first on
// doc, calling leaf with every parsed combination. Each field's candidates
// come from the point as set so far (its GPU count, model and batch).
func (sw *Sweep) autoRec(doc *yaml.Node, autos []int, vals []*yaml.Node, leaf func(*scenario.Plan, error)) {
	if sw.checkProgress() != nil {
		return // enumerate reports it
	}
	if len(autos) == 0 {
		leaf(sw.parsePoint(doc))
		return
	}
	fi := autos[0]
	f := &sw.Fields[fi]
	cands, err := sw.candidates(doc, f)
	if err != nil {
		leaf(nil, err)
		return
	}
	for _, c := range cands {
		d := scenario.CloneNode(doc)
		vals[fi] = c
		if err := f.knob.Set(d, scenario.CloneNode(c)); err != nil {
			leaf(nil, err)
			continue
		}
		sw.autoRec(d, autos[1:], vals, leaf)
	}
}

// candidates lists an auto field's values for the point doc.
func (sw *Sweep) candidates(doc *yaml.Node, f *Field) ([]*yaml.Node, error) {
	if vals := f.knob.AutoValues(); vals != nil {
		tag := "!!str"
		if f.knob.IsBool() {
			tag = "!!bool"
		}
		out := make([]*yaml.Node, len(vals))
		for i, c := range vals {
			out[i] = &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: c}
		}
		return out, nil
	}
	probe, err := scenario.Probe(doc, sw.dir)
	if err != nil {
		return nil, err
	}
	var out []*yaml.Node
	for _, v := range f.knob.Auto.Ints(probe) {
		if (f.Min != nil && v < *f.Min) || (f.Max != nil && v > *f.Max) {
			continue
		}
		out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)})
	}
	return out, nil
}

// parsePoint resolves a point's document; an invalid point still gives
// its plan as far as resolution got (scenario.ParsePartial), so the error
// row has the point's knobs and a run id.
func (sw *Sweep) parsePoint(doc *yaml.Node) (*scenario.Plan, error) {
	return scenario.ParsePartial(doc, sw.dir, sw.Name)
}

// parsePending resolves a listed combination: by the template when its
// document was not built, else from the document.
func (sw *Sweep) parsePending(b *pendingPoint) (*scenario.Plan, error) {
	if b.doc == nil {
		tv := b.tv
		if tv == nil {
			tv, _ = sw.typedValues(b.vals)
		}
		if b.into == nil {
			return sw.tmpl.Plan(sw.Name, tv)
		}
		return b.into, sw.tmpl.PlanInto(b.into, sw.Name, tv)
	}
	return sw.parsePoint(b.doc)
}

// typedValues returns the template values of a point's values (a nil value
// keeps the base's), false when one of them must go through the YAML.
func (sw *Sweep) typedValues(vals []*yaml.Node) ([]scenario.Value, bool) {
	if sw.tmpl == nil {
		return nil, false
	}
	out := make([]scenario.Value, len(vals))
	for fi, v := range vals {
		if v == nil {
			continue
		}
		f := &sw.Fields[fi]
		found := false
		for j, n := range f.nodes {
			if n == v {
				if !f.ok[j] {
					return nil, false
				}
				out[fi], found = f.typed[j], true
				break
			}
		}
		if !found { // an auto field's candidate
			tv, ok := sw.tmpl.Value(f.knob, v)
			if !ok {
				return nil, false
			}
			out[fi] = tv
		}
	}
	return out, true
}

// describe renders the swept values of a point, "parallel.tp=8 parallel.pp=4".
func (sw *Sweep) describe(vals []*yaml.Node) string {
	var parts []string
	for i, f := range sw.Fields {
		v := "(base)"
		if vals[i] != nil {
			v = vals[i].Value
		}
		parts = append(parts, f.Path+"="+v)
	}
	return strings.Join(parts, " ")
}

func describeOrEmpty(n *yaml.Node) string {
	if n.Kind == yaml.MappingNode {
		return "an empty mapping"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return scenario.DescribeNode(n)
}

// stripLine drops a trailing " (line N)" (the caller adds the line once).
func stripLine(err error) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, " (line "); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	return errors.New(msg)
}

func stripComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		stripComments(c)
	}
}
