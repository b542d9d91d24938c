package hardware

import (
	"bytes"
	"embed"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

//go:embed data
var dataFS embed.FS

// dataSum is a CRC-32C of every file below fsys's data folder, names and
// contents, in path order: catalog_gen.go records the sum of the data it
// was generated from (generatedDataSum). ≈ 80 KB hashed: tens of µs. The
// files are read through one buffer: io.Copy made a 32 KB buffer for each
// of them (an embedded file has no WriteTo, the hash no ReadFrom), fresh
// heap at every process start that reads the catalog (the 70B sweep's
// faults under dataSum: 72 → 27).
func dataSum(fsys fs.FS) (uint32, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	buf := make([]byte, 8<<10)
	err := fs.WalkDir(fsys, "data", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := fsys.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		io.WriteString(h, name+"\x00")
		if _, err := io.CopyBuffer(h, f, buf); err != nil {
			return err
		}
		_, err = h.Write([]byte{0})
		return err
	})
	return h.Sum32(), err
}

// generatedCurrent reports whether catalog_gen.go's tables, records and
// frameworks are those of the embedded data: generated from files with
// the sum the embedded ones have. Where a file under data/ was edited and
// go generate not run, the catalog decodes the YAML as it is, so a stale
// generated file can never stand in for the data (it only fails
// TestCatalogGenerated).
var generatedCurrent = sync.OnceValue(func() bool {
	sum, err := dataSum(dataFS)
	return err == nil && generatedDataSum != 0 && sum == generatedDataSum
})

// fromGenerated is gen's value where catalog_gen.go is current
// (generatedCurrent) and compiled in (gen not nil), else decode's.
func fromGenerated[T any](gen func() *T, decode func() (*T, error)) (*T, error) {
	if generatedCurrent() {
		if v := gen(); v != nil {
			return v, nil
		}
	}
	return decode()
}

// calEntry is one calibration entry: its value as written (parsed into the
// figure's type where it is used) and its source.
type calEntry struct {
	raw yaml.Node
	fit *FitSpec // how calibrate refits it from published runs; nil: not refit
	Source
}

func (e *calEntry) UnmarshalYAML(n *yaml.Node) error {
	var f Figure[float64]
	var val *yaml.Node
	cp := *n
	cp.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "value":
			// kept as text: an entry may be a duration (2.75ms) or a number
			val = v
			continue
		case "fit":
			var spec FitSpec
			if err := v.Decode(&spec); err != nil {
				return fmt.Errorf("line %d: fit: %w", v.Line, err)
			}
			if len(spec.Grid) == 0 || spec.Prior == "" {
				return fmt.Errorf("line %d: fit: needs a grid and a prior", v.Line)
			}
			e.fit = &spec
			continue
		case "objective":
			continue // what calibrate measured at the value: for the reader
		case "fitted", "measured", "runs":
		default:
			return fmt.Errorf("line %d: unknown calibration key %q (valid: value, fitted, measured, runs, fit, objective)", k.Line, k.Value)
		}
		cp.Content = append(cp.Content, k, v)
	}
	if val == nil || val.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a calibration entry needs a value", n.Line)
	}
	cp.Content = append(cp.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "value"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "0"})
	if err := cp.Decode(&f); err != nil {
		return err
	}
	if f.Kind != Fitted && f.Kind != Measured {
		return fmt.Errorf("line %d: a calibration entry is fitted: \"how\" (or measured), with the runs", n.Line)
	}
	e.raw, e.Source = *val, f.Source
	return nil
}

type protoLatencyRecord struct {
	LL     Figure[time.Duration] `yaml:"ll"`
	LL128  Figure[time.Duration] `yaml:"ll128"`
	Simple Figure[time.Duration] `yaml:"simple"`
}

type algoLatencyRecord struct {
	Ring     protoLatencyRecord `yaml:"ring"`
	Tree     protoLatencyRecord `yaml:"tree"`
	NVLS     protoLatencyRecord `yaml:"nvls"`
	NVLSTree protoLatencyRecord `yaml:"nvls_tree"`
}

// ncclTuning is one architecture row of NCCL's tuning tables.
type ncclTuning struct {
	LLMaxBW               Figure[float64]    `yaml:"ll_max_bw"`
	LL128Fraction         Figure[float64]    `yaml:"ll128_fraction"`
	PerChannelRingLL128BW Figure[float64]    `yaml:"per_channel_ring_ll128_bw"`
	PerChannelTreeBW      [3]Figure[float64] `yaml:"per_channel_tree_bw"`
	PerChannelTreeLL128BW [3]Figure[float64] `yaml:"per_channel_tree_ll128_bw"`
	PerChannelNVLSTreeBW  [3]Figure[float64] `yaml:"per_channel_nvls_tree_bw"`
	NVLSChannels          Figure[int]        `yaml:"nvls_channels"`
}

type ncclHost struct {
	NetOverhead Figure[time.Duration] `yaml:"net_overhead"`
	LLMaxBW     [2]Figure[float64]    `yaml:"ll_max_bw"`
}

// ncclLatency is nccl.yaml's latency table (named, not an anonymous
// struct, so that catalog_gen.go can spell its type).
type ncclLatency struct {
	Base   algoLatencyRecord `yaml:"base"`
	NVLink algoLatencyRecord `yaml:"nvlink"`
	PCIe   algoLatencyRecord `yaml:"pcie"`
	Net    algoLatencyRecord `yaml:"net"`
}

// rcclLatency is nccl.yaml's rccl_latency table.
type rcclLatency struct {
	Base   algoLatencyRecord `yaml:"base"`
	NVLink algoLatencyRecord `yaml:"nvlink"`
	PCIe   algoLatencyRecord `yaml:"pcie"`
}

// ncclFile is nccl.yaml: NCCL's constants shared by every GPU of an
// architecture or host.
type ncclFile struct {
	Tuning  map[string]ncclTuning `yaml:"tuning"`
	Latency ncclLatency           `yaml:"latency"`
	// RCCLLatency replaces Latency's base, NVLink (XGMI) and PCIe rows for
	// comm.library rccl (RCCL's tuning.cc); the network row stays NCCL's.
	RCCLLatency    rcclLatency         `yaml:"rccl_latency"`
	LLFraction     Figure[float64]     `yaml:"ll_fraction"`
	PCIeEfficiency Figure[float64]     `yaml:"pcie_efficiency"`
	Hosts          map[string]ncclHost `yaml:"hosts"`
}

// catalog is the embedded hardware data. The shared tables (calibration,
// NCCL's constants, host dispatch, host links) are decoded when the catalog
// is first used; a GPU or NIC record file only the first time its name is
// asked for (then decoded and resolved once), so a run that names one GPU
// and one NIC decodes 2 of the 22 record files: the GPU records are ≈ 63 KB
// of the catalog's ≈ 87 KB of YAML (docs/design.md "Speed", load24). The
// names are the record files' names, which the tests hold to the records
// they hold (a file named for another record is an error when it is read).
type catalog struct {
	gpus     map[string]*entry[GPURecord, GPU]
	gpuNames []string
	nics     map[string]*entry[NICRecord, NIC]
	nicNames []string
	links    map[string]HostLinkRecord
	cal      map[string]calEntry
	calOrder []string // the calibration entries in the file's order
	nccl     ncclFile
	dispatch map[string]HostDispatch // data/host.yaml, resolved
}

// entry is one record file of the catalog, decoded (rec) and resolved
// with the committed calibration (res) on first use, once; both are safe
// to call from many goroutines and keep their error.
type entry[R, V any] struct {
	rec func() (R, error)
	res func() (V, error)
}

// load is the catalog, built once.
var load = sync.OnceValues(newCatalog)

// recordsDecoded counts the record files decoded, or taken from
// catalog_gen.go in their place (the tests hold the catalog to building
// only the records asked for).
var recordsDecoded atomic.Int64

// catalogTables is the shared tables as the embedded YAML holds them,
// before resolving: what newCatalog takes from catalog_gen.go (built from
// the YAML by `go generate ./sim/hardware`, held to it by
// TestCatalogGenerated) or, without it, decodes.
type catalogTables struct {
	cal      map[string]calEntry
	calOrder []string // the calibration entries in the file's order
	nccl     ncclFile
	host     hostFile
	links    map[string]HostLinkRecord
}

// decodeTables decodes the shared tables from the embedded YAML.
func decodeTables() (*catalogTables, error) {
	t := &catalogTables{links: map[string]HostLinkRecord{}}
	// calibration.yaml is parsed once: its entries' order from the tree,
	// the entries decoded from it (calEntry checks its own keys).
	var calDoc yaml.Node
	if err := yaml.Unmarshal(CalibrationFile(), &calDoc); err != nil || len(calDoc.Content) == 0 {
		return nil, fmt.Errorf("hardware catalog: calibration.yaml: %v", err)
	}
	if err := calDoc.Decode(&t.cal); err != nil {
		return nil, fmt.Errorf("hardware catalog: calibration.yaml: %w", err)
	}
	for i := 0; i < len(calDoc.Content[0].Content); i += 2 {
		t.calOrder = append(t.calOrder, calDoc.Content[0].Content[i].Value)
	}
	if err := decodeFile("data/nccl.yaml", &t.nccl); err != nil {
		return nil, err
	}
	if err := decodeFile("data/host.yaml", &t.host); err != nil {
		return nil, err
	}
	if err := decodeDir("data/links", t.links, func(r HostLinkRecord) string { return r.Name }); err != nil {
		return nil, err
	}
	return t, nil
}

// newCatalog takes the shared tables (generated, else decoded), resolves
// the host dispatch classes and lists the record files. The generated
// tables spare every process yaml.v3's parse of the embedded files: ≈ 2.3
// ms, 836 KB and 12.6 k allocations for the tables and one GPU and NIC
// (BenchmarkCatalog, cat43; docs/design.md "Speed").
func newCatalog() (*catalog, error) {
	t, err := fromGenerated(generatedTables, decodeTables)
	if err != nil {
		return nil, err
	}
	c := &catalog{links: t.links, cal: t.cal, calOrder: t.calOrder, nccl: t.nccl}
	host := t.host
	c.dispatch = map[string]HostDispatch{}
	for _, n := range sortedKeys(host.Dispatch) {
		d, err := resolveDispatch(c.cal, n, host.Dispatch[n])
		if err != nil {
			return nil, fmt.Errorf("hardware catalog: host.yaml: dispatch.%s: %w", n, err)
		}
		c.dispatch[n] = d
	}
	for _, n := range []string{DispatchEager, DispatchGraphs} {
		if _, ok := c.dispatch[n]; !ok {
			return nil, fmt.Errorf("hardware catalog: host.yaml: dispatch.%s: missing", n)
		}
	}
	c.nicNames, c.nics, err = lazyDir("data/nics", func(r NICRecord) string { return r.Name },
		func(r NICRecord) (NIC, error) { return resolveNIC(c.cal, r) })
	if err != nil {
		return nil, err
	}
	c.gpuNames, c.gpus, err = lazyDir("data/gpus", func(r GPURecord) string { return r.Name },
		func(r GPURecord) (GPU, error) { return c.resolveGPU(r, 0) })
	if err != nil {
		return nil, err
	}
	return c, nil
}

func decodeFile(name string, v any) error {
	data, err := dataFS.ReadFile(name)
	if err != nil {
		return err
	}
	if err := strictDecode(data, v); err != nil {
		return fmt.Errorf("hardware catalog: %s: %w", strings.TrimPrefix(name, "data/"), err)
	}
	return nil
}

// decodeRecord decodes the record file name, which must hold the record
// key names (the file is named for its record).
func decodeRecord[R any](name, want string, key func(R) string) (R, error) {
	var r R
	recordsDecoded.Add(1)
	if err := decodeFile(name, &r); err != nil {
		return r, err
	}
	if k := key(r); k != want {
		return r, fmt.Errorf("hardware catalog: %s holds %q: the file is named for its record", name, k)
	}
	return r, nil
}

func decodeDir[R any](dir string, into map[string]R, key func(R) string) error {
	entries, err := fs.ReadDir(dataFS, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		r, err := decodeRecord(name, strings.TrimSuffix(e.Name(), ".yaml"), key)
		if err != nil {
			return err
		}
		into[key(r)] = r
	}
	return nil
}

// lazyDir lists the record files of dir, sorted by name, each an entry
// that decodes its file and resolves it on first use.
func lazyDir[R, V any](dir string, key func(R) string, resolve func(R) (V, error)) ([]string, map[string]*entry[R, V], error) {
	files, err := fs.ReadDir(dataFS, dir)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(files))
	m := make(map[string]*entry[R, V], len(files))
	for _, f := range files {
		name := path.Join(dir, f.Name())
		n, ok := strings.CutSuffix(f.Name(), ".yaml")
		if !ok || n == "" {
			return nil, nil, fmt.Errorf("hardware catalog: %s: a record file is named NAME.yaml for its record", name)
		}
		e := &entry[R, V]{rec: sync.OnceValues(func() (R, error) {
			if generatedCurrent() {
				if r, ok := generatedRecord(name).(R); ok {
					recordsDecoded.Add(1)
					return r, nil
				}
			}
			return decodeRecord(name, n, key)
		})}
		e.res = sync.OnceValues(func() (V, error) {
			var zero V
			r, err := e.rec()
			if err != nil {
				return zero, err
			}
			v, err := resolve(r)
			if err != nil {
				return zero, fmt.Errorf("hardware catalog: %s: %w", strings.TrimPrefix(name, "data/"), err)
			}
			return v, nil
		})
		names = append(names, n)
		m[n] = e
	}
	slices.Sort(names)
	return names, m, nil
}

// gpuRecord is the catalog GPU's record as its file holds it; the error
// names an unknown GPU and lists the valid ones.
func (c *catalog) gpuRecord(name string) (GPURecord, error) {
	e, ok := c.gpus[name]
	if !ok {
		return GPURecord{}, fmt.Errorf("unknown GPU %q (valid: %s)", name, strings.Join(c.gpuNames, ", "))
	}
	return e.rec()
}

// strictDecode decodes YAML, rejecting unknown fields.
func strictDecode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mustLoad is the catalog; the embedded files are checked by the tests, so
// a failure here is a build defect.
func mustLoad() *catalog {
	c, err := load()
	if err != nil {
		panic(err)
	}
	return c
}

// LookupGPU returns a catalog GPU, resolved. The error names the unknown
// value and lists the valid names. The returned value is a copy.
func LookupGPU(name string) (GPU, error) {
	c := mustLoad()
	e, ok := c.gpus[name]
	if !ok {
		return GPU{}, fmt.Errorf("unknown GPU %q (valid: %s)", name, strings.Join(c.gpuNames, ", "))
	}
	g, err := e.res()
	if err != nil {
		return GPU{}, err
	}
	return g.clone(), nil
}

// LookupNIC returns a catalog NIC, resolved; the error lists valid names.
func LookupNIC(name string) (NIC, error) {
	n, err := sharedNIC(name)
	if err != nil {
		return NIC{}, err
	}
	n.Sources = slices.Clone(n.Sources)
	n.Comm.Sources = slices.Clone(n.Comm.Sources)
	return n, nil
}

// NICGbps is LookupNIC(name).Gbps, error included, without LookupNIC's
// copies of the record's source lists: resolving a scenario reads the
// line rate only, once per sweep point (the copies and a whole NIC kept
// in each of a sweep's retained plans were ≈ 140 page faults of the
// 1,000-point 70B sweep; docs/design.md "Speed", foot37).
func NICGbps(name string) (float64, error) {
	n, err := sharedNIC(name)
	if err != nil {
		return 0, err
	}
	return n.Gbps, nil
}

// sharedNIC is the catalog's resolved NIC: its slices are the catalog's,
// not to be modified or handed out.
func sharedNIC(name string) (NIC, error) {
	c := mustLoad()
	e, ok := c.nics[name]
	if !ok {
		return NIC{}, fmt.Errorf("unknown NIC %q (valid: %s)", name, strings.Join(c.nicNames, ", "))
	}
	return e.res()
}

// GPUNames lists the catalog's GPUs in sorted order (a fresh slice).
func GPUNames() []string { return slices.Clone(mustLoad().gpuNames) }

// NICNames lists the catalog's NICs in sorted order (a fresh slice).
func NICNames() []string { return slices.Clone(mustLoad().nicNames) }

// GPURecordOf returns a catalog GPU's record as its file holds it.
func GPURecordOf(name string) (GPURecord, error) { return mustLoad().gpuRecord(name) }

// NICRecordOf returns a catalog NIC's record as its file holds it.
func NICRecordOf(name string) (NICRecord, error) {
	c := mustLoad()
	e, ok := c.nics[name]
	if !ok {
		return NICRecord{}, fmt.Errorf("unknown NIC %q (valid: %s)", name, strings.Join(c.nicNames, ", "))
	}
	return e.rec()
}

// ParseGPU reads a GPU record file and resolves it; errors name the field.
// Reading the file is the caller's (the core does no I/O).
func ParseGPU(data []byte) (GPU, error) { return ParseGPUCalibrated(data, nil) }

// FitNames lists the calibration table's entries.
func FitNames() []string { return sortedKeys(mustLoad().cal) }

func (g GPU) clone() GPU {
	g.Sources = slices.Clone(g.Sources)
	g.Compute.Sources = slices.Clone(g.Compute.Sources)
	g.Compute.AttnKernels = slices.Clone(g.Compute.AttnKernels)
	g.Comm.Sources = slices.Clone(g.Comm.Sources)
	return g
}

// dispatchRecord is one dispatch class of data/host.yaml.
type dispatchRecord struct {
	Description string                `yaml:"description"`
	KernelFwd   Figure[time.Duration] `yaml:"kernel_fwd"`
	KernelBwd   Figure[time.Duration] `yaml:"kernel_bwd"`
	Call        Figure[time.Duration] `yaml:"call"`
}

// hostFile is data/host.yaml.
type hostFile struct {
	Dispatch map[string]dispatchRecord `yaml:"dispatch"`
}

// HostDispatch is the host time of one dispatch class (data/host.yaml) on
// an x86 host: what issuing one GPU kernel costs the rank's CPU thread in
// a forward (and recomputed forward, optimizer) pass and in a backward
// pass, and what one collective, pipeline send or host copy call costs.
// Scale by the GPU's ComputeProfile.HostDispatchScale for its host CPU.
type HostDispatch struct {
	Class       string
	Description string
	// KernelFwd, KernelBwd and Call are seconds.
	KernelFwd, KernelBwd, Call float64
	Sources                    []string
}

// Dispatch classes (HostDispatchNames lists every one in data/host.yaml).
const (
	DispatchEager  = "eager"
	DispatchGraphs = "graphs"
)

// LookupHostDispatch returns the dispatch class named class.
func LookupHostDispatch(class string) (HostDispatch, error) {
	c, err := load()
	if err != nil {
		return HostDispatch{}, err
	}
	d, ok := c.dispatch[class]
	if !ok {
		return HostDispatch{}, fmt.Errorf("host dispatch class %q: unknown (valid: %s)", class, strings.Join(sortedKeys(c.dispatch), ", "))
	}
	return d, nil
}

// HostDispatchNames lists the dispatch classes, sorted.
func HostDispatchNames() []string { return sortedKeys(mustLoad().dispatch) }

func resolveDispatch(cal map[string]calEntry, name string, d dispatchRecord) (HostDispatch, error) {
	r := &resolver{cal: cal}
	h := HostDispatch{Class: name, Description: d.Description,
		KernelFwd: value(r, "kernel_fwd", d.KernelFwd, true).Seconds(),
		KernelBwd: value(r, "kernel_bwd", d.KernelBwd, true).Seconds(),
		Call:      value(r, "call", d.Call, true).Seconds()}
	if r.err != nil {
		return HostDispatch{}, r.err
	}
	h.Sources = r.sources
	return h, nil
}
