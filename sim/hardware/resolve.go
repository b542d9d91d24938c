package hardware

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/units"
)

// figureish is implemented by every Figure.
type figureish interface {
	source() *Source
	given() bool
}

func (f *Figure[T]) source() *Source { return &f.Source }
func (f *Figure[T]) given() bool     { return f.Kind != 0 || f.Fit != "" }

// resolver resolves the figures of one record against the calibration
// table, collecting a source line per figure and the first error.
type resolver struct {
	cal     map[string]calEntry
	sources []string
	err     error
}

func (r *resolver) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, a...)
	}
}

// value returns the value the simulator uses for figure f at path: its
// own, or its calibration entry's, times the calibration factors it names.
// A figure not given is zero, an error when required.
func value[T Number](r *resolver, path string, f Figure[T], required bool) T {
	var zero T
	if !f.given() {
		if required {
			r.fail("%s: missing (give it with its source, or inherit it: inherits: a catalog GPU)", path)
		}
		return zero
	}
	v, src := f.Value, f.Source
	if f.Fit != "" {
		e, ok := r.cal[f.Fit]
		if !ok {
			r.fail("%s: fit %q is not in the calibration table (valid: %s)", path, f.Fit, strings.Join(sortedKeys(r.cal), ", "))
			return zero
		}
		if err := parseValue(&e.raw, &v); err != nil {
			r.fail("calibration %s: %v", f.Fit, err)
			return zero
		}
		if src.Kind == 0 || src.Kind == Fitted {
			src = e.Source
		}
		src.Fit = f.Fit
	}
	if len(f.Times) > 0 {
		x, ok := any(&v).(*float64)
		if !ok {
			r.fail("%s: times applies to plain numbers only", path)
			return zero
		}
		for _, name := range f.Times {
			e, ok := r.cal[name]
			if !ok {
				r.fail("%s: times %q is not in the calibration table (valid: %s)", path, name, strings.Join(sortedKeys(r.cal), ", "))
				return zero
			}
			var m float64
			if err := parseValue(&e.raw, &m); err != nil {
				r.fail("calibration %s: %v", name, err)
				return zero
			}
			*x *= m
		}
	}
	line := path + ": " + src.Kind.String()
	if src.Fit != "" {
		line += " (" + src.Fit + ")"
	}
	if len(f.Times) > 0 {
		line += " × " + strings.Join(f.Times, " × ")
	}
	r.sources = append(r.sources, line+": "+src.Ref)
	return v
}

// Resolve turns a record into the GPU the simulator uses, filling what it
// leaves out from its reference GPU (Inherits) and applying the
// calibration table. Errors name the field.
func Resolve(rec GPURecord) (GPU, error) {
	c, err := load()
	if err != nil {
		return GPU{}, err
	}
	return c.resolveGPU(rec, 0)
}

func (c *catalog) resolveGPU(rec GPURecord, depth int) (GPU, error) {
	written := rec.clone()
	rec = rec.clone()
	if rec.Name == "" {
		return GPU{}, fmt.Errorf("name: required")
	}
	if rec.Inherits != "" {
		parent, err := c.gpuRecord(rec.Inherits)
		if err != nil {
			return GPU{}, fmt.Errorf("inherits: %w", err)
		}
		if depth > 4 {
			return GPU{}, fmt.Errorf("inherits: chain longer than 4 from %s", rec.Name)
		}
		if parent.Inherits != "" {
			p, err := c.resolveGPU(parent, depth+1)
			if err != nil {
				return GPU{}, err
			}
			parent = p.inheritedRecord()
		}
		inherit(&rec, parent)
	}
	switch {
	case rec.ScaleUp == "":
		return GPU{}, fmt.Errorf("%s: scale_up: required (valid: nvlink, xgmi, nvlink-bridge, none)", rec.Name)
	case !oneOf(rec.ScaleUp, "nvlink", "xgmi", "nvlink-bridge", "none"):
		return GPU{}, fmt.Errorf("%s: scale_up: unknown value %q (valid: nvlink, xgmi, nvlink-bridge, none)", rec.Name, rec.ScaleUp)
	}
	r := &resolver{cal: c.cal}
	g := GPU{Name: rec.Name, Description: rec.Description, Arch: rec.Arch, PersistentGEMM: persistentGEMM(rec.Arch), Inherits: rec.Inherits, Record: written,
		ScaleUp: rec.ScaleUp, DefaultIntraNode: rec.DefaultIntraNode}
	g.HBMBytes = value(r, "hbm_bytes", rec.HBMBytes, true)
	g.HBMUsableBytes = value(r, "hbm_usable_bytes", rec.HBMUsableBytes, false)
	if g.HBMUsableBytes <= 0 {
		g.HBMUsableBytes = g.HBMBytes
	}
	g.HBMBandwidth = value(r, "hbm_bandwidth", rec.HBMBandwidth, true)
	p := rec.Peak
	g.Peak = PeakFLOPS{
		FP32: value(r, "peak_flops.fp32", p.FP32, true), TF32: value(r, "peak_flops.tf32", p.TF32, false),
		FP16: value(r, "peak_flops.fp16", p.FP16, true), BF16: value(r, "peak_flops.bf16", p.BF16, true),
		FP8: value(r, "peak_flops.fp8", p.FP8, false), FP4: value(r, "peak_flops.fp4", p.FP4, false),
	}
	g.SMs = value(r, "sms", rec.SMs, true)
	scaleUp := rec.ScaleUp != "none"
	g.ScaleUpBandwidth = value(r, "scale_up_bandwidth", rec.ScaleUpBandwidth, scaleUp)
	g.ScaleUpLinks = value(r, "scale_up_links", rec.ScaleUpLinks, scaleUp)
	g.ScaleUpLatency = value(r, "scale_up_latency", rec.ScaleUpLatency, scaleUp)
	g.NVLS = value(r, "nvls", rec.NVLS, false)
	g.DomainGPUs = value(r, "domain_gpus", rec.DomainGPUs, true)
	g.DefaultGPUsPerNode = value(r, "default_gpus_per_node", rec.DefaultGPUsPerNode, true)
	g.TDPWatts = value(r, "tdp_watts", rec.TDPWatts, true)
	g.GPUHourUSD = value(r, "gpu_hour_usd", rec.GPUHourUSD, true)
	if !oneOf(rec.DefaultIntraNode, "nvswitch", "pcie", "nvlink-pairs", "nvlink-mesh") {
		r.fail("default_intra_node: unknown value %q (valid: nvswitch, pcie, nvlink-pairs, nvlink-mesh)", rec.DefaultIntraNode)
	}
	link, ok := c.links[rec.PCIe]
	if !ok {
		r.fail("pcie: unknown host link %q (valid: %s)", rec.PCIe, strings.Join(sortedKeys(c.links), ", "))
	} else {
		l := c.resolveLink(link, r)
		g.PCIeGen, g.PCIeBandwidth, g.PCIeLatency = l.Gen, l.Bandwidth, l.Latency
		g.HostCopy = c.hostCopy(rec.HostCopy, l, r)
	}
	if rec.Compute == nil {
		r.fail("compute: required (give the GPU's compute profile, or inherits: a catalog GPU)")
	} else {
		g.Compute = resolveCompute(r, *rec.Compute)
	}
	if rec.Comm == nil {
		r.fail("comm: required (give the GPU's communication profile, or inherits: a catalog GPU)")
	} else {
		g.Comm = c.resolveComm(r, *rec.Comm)
	}
	if r.err != nil {
		return GPU{}, fmt.Errorf("%s: %w", rec.Name, r.err)
	}
	g.Sources = r.sources
	return g, nil
}

// clone copies the record's sections and lists, so that filling it in
// (inherit) never touches the catalog's.
func (r GPURecord) clone() GPURecord {
	if r.Compute != nil {
		c := *r.Compute
		c.Attention.Kernels = slices.Clone(c.Attention.Kernels)
		r.Compute = &c
	}
	if r.Comm != nil {
		c := *r.Comm
		r.Comm = &c
	}
	if r.HostCopy != nil {
		h := *r.HostCopy
		r.HostCopy = &h
	}
	return r
}

// inheritedRecord is the record with its inherited figures filled in, for
// a GPU that inherits from one that inherits.
func (g GPU) inheritedRecord() GPURecord { return g.Record }

func resolveCompute(r *resolver, c ComputeRecord) ComputeProfile {
	first := len(r.sources)
	p := ComputeProfile{
		MatmulEffBF16:      value(r, "compute.matmul_eff_bf16", c.MatmulEffBF16, true),
		MatmulEffFP8:       value(r, "compute.matmul_eff_fp8", c.MatmulEffFP8, false),
		MatmulEffTF32:      value(r, "compute.matmul_eff_tf32", c.MatmulEffTF32, false),
		HBMEff:             value(r, "compute.hbm_eff", c.HBMEff, true),
		KernelOverhead:     value(r, "compute.kernel_overhead", c.KernelOverhead, true).Seconds(),
		BlockScaledGEMMRel: value(r, "compute.block_scaled_gemm_rel", c.BlockScaledGEMMRel, false),
		RowScaledGEMMRel:   value(r, "compute.row_scaled_gemm_rel", c.RowScaledGEMMRel, false),
		MoEHostSync:        value(r, "compute.moe_host_sync", c.MoEHostSync, true).Seconds(),
		HostSyncStall:      value(r, "compute.host_sync_stall", c.HostSyncStall, true).Seconds(),
		HostDispatchScale:  value(r, "compute.host_dispatch_scale", c.HostDispatchScale, false),
		AttnKernel:         c.Attention.Auto,
	}
	if p.HostDispatchScale == 0 {
		p.HostDispatchScale = 1 // an x86 host, as data/host.yaml's costs
	}
	for _, k := range c.Attention.Kernels {
		if !oneOf(k.Name, KernelFlash2, KernelFlash3, KernelCuDNN, KernelTriton) {
			r.fail("compute.attention.kernels: unknown kernel %q (valid: %s, %s, %s, %s)", k.Name, KernelFlash2, KernelFlash3, KernelCuDNN, KernelTriton)
		}
		at := "compute.attention." + k.Name
		ak := AttnKernel{Name: k.Name, Fwd: value(r, at+".fwd", k.Fwd, true), Bwd: value(r, at+".bwd", k.Bwd, true)}
		p.AttnKernels = append(p.AttnKernels, ak)
		if k.Name == c.Attention.Auto {
			p.AttnEff, p.AttnBwdEff = ak.Fwd, ak.Bwd
		}
	}
	if p.AttnEff == 0 {
		r.fail("compute.attention.auto: %q is not among the GPU's kernels", c.Attention.Auto)
	}
	p.Sources = append([]string(nil), r.sources[first:]...)
	return p
}

func (c *catalog) resolveComm(r *resolver, m CommRecord) CommProfile {
	t, ok := c.nccl.Tuning[m.Tuning]
	if !ok {
		r.fail("comm.tuning: unknown NCCL row %q (valid: %s)", m.Tuning, strings.Join(sortedKeys(c.nccl.Tuning), ", "))
		return CommProfile{}
	}
	h, ok := c.nccl.Hosts[m.Host]
	if !ok {
		r.fail("comm.host: unknown host CPU %q (valid: %s)", m.Host, strings.Join(sortedKeys(c.nccl.Hosts), ", "))
		return CommProfile{}
	}
	if !oneOf(m.Library, "nccl", "rccl") {
		r.fail("comm.library: unknown value %q (valid: nccl, rccl)", m.Library)
	}
	first := len(r.sources)
	nodes := func(path string, f [3]Figure[float64]) PerNodes {
		return PerNodes{value(r, path+"[0]", f[0], true), value(r, path+"[1]", f[1], true), value(r, path+"[2]", f[2], true)}
	}
	p := CommProfile{
		Library:               m.Library,
		LL128Fraction:         value(r, "nccl."+m.Tuning+".ll128_fraction", t.LL128Fraction, true),
		PerChannelRingLL128BW: value(r, "nccl."+m.Tuning+".per_channel_ring_ll128_bw", t.PerChannelRingLL128BW, true),
		PerChannelTreeBW:      nodes("nccl."+m.Tuning+".per_channel_tree_bw", t.PerChannelTreeBW),
		PerChannelTreeLL128BW: nodes("nccl."+m.Tuning+".per_channel_tree_ll128_bw", t.PerChannelTreeLL128BW),
		PerChannelNVLSTreeBW:  nodes("nccl."+m.Tuning+".per_channel_nvls_tree_bw", t.PerChannelNVLSTreeBW),
		NVLSChannels:          value(r, "nccl."+m.Tuning+".nvls_channels", t.NVLSChannels, false),
		LLFraction:            value(r, "nccl.ll_fraction", c.nccl.LLFraction, true),
		PCIeEfficiency:        value(r, "nccl.pcie_efficiency", c.nccl.PCIeEfficiency, true),
		NetOverhead:           value(r, "nccl.hosts."+m.Host+".net_overhead", h.NetOverhead, true),
	}
	p.LLMaxBW = PerNodes{value(r, "nccl."+m.Tuning+".ll_max_bw", t.LLMaxBW, true),
		value(r, "nccl.hosts."+m.Host+".ll_max_bw[0]", h.LLMaxBW[0], true),
		value(r, "nccl.hosts."+m.Host+".ll_max_bw[1]", h.LLMaxBW[1], true)}
	lat := c.nccl.Latency
	if m.Library == "rccl" {
		rl := c.nccl.RCCLLatency
		p.BaseLatency = algoLatency(r, "nccl.rccl_latency.base", rl.Base)
		p.NVLinkLatency = algoLatency(r, "nccl.rccl_latency.nvlink", rl.NVLink)
		p.PCIeLatency = algoLatency(r, "nccl.rccl_latency.pcie", rl.PCIe)
	} else {
		p.BaseLatency = algoLatency(r, "nccl.latency.base", lat.Base)
		p.NVLinkLatency = algoLatency(r, "nccl.latency.nvlink", lat.NVLink)
		p.PCIeLatency = algoLatency(r, "nccl.latency.pcie", lat.PCIe)
	}
	p.NetLatency = algoLatency(r, "nccl.latency.net", lat.Net)
	p.LL128NetFraction = p.LL128Fraction // NCCL's tuning row: a record's refit replaces only the scale-up side
	if m.LL128Fraction.given() {
		p.LL128Fraction = value(r, "comm.ll128_fraction", m.LL128Fraction, false)
	}
	if m.NVLSChannels.given() {
		p.NVLSChannels = value(r, "comm.nvls_channels", m.NVLSChannels, false)
	}
	p.Channels = value(r, "comm.channels", m.Channels, true)
	p.RingEfficiency = value(r, "comm.ring_efficiency", m.RingEfficiency, true)
	p.P2PEfficiency = value(r, "comm.p2p_efficiency", m.P2PEfficiency, true)
	p.NVLSEfficiency = value(r, "comm.nvls_efficiency", m.NVLSEfficiency, false)
	p.LaunchOverhead = value(r, "comm.launch_overhead", m.LaunchOverhead, true)
	p.RampTime = value(r, "comm.ramp_time", m.RampTime, true)
	p.RampBytes = float64(value(r, "comm.ramp_bytes", m.RampBytes, true))
	p.Interference = CommCTAs{ScaleUp: p.Channels,
		ScaleOut: value(r, "comm.ctas_scale_out", m.CTAsScaleOut, true), P2P: value(r, "comm.ctas_p2p", m.CTAsP2P, true)}
	p.Sources = append([]string(nil), r.sources[first:]...)
	p.Sources = append(p.Sources, "comm.system (the reference system of NCCL's host rows): "+m.System)
	return p
}

func algoLatency(r *resolver, path string, a algoLatencyRecord) AlgoLatency {
	proto := func(p string, l protoLatencyRecord) ProtoLatency {
		return ProtoLatency{LL: value(r, p+".ll", l.LL, false), LL128: value(r, p+".ll128", l.LL128, false),
			Simple: value(r, p+".simple", l.Simple, false)}
	}
	return AlgoLatency{Ring: proto(path+".ring", a.Ring), Tree: proto(path+".tree", a.Tree),
		NVLS: proto(path+".nvls", a.NVLS), NVLSTree: proto(path+".nvls_tree", a.NVLSTree)}
}

// hostCopy is the record's host copy figures, or the PCIe link's line
// rate × its copy fraction.
func (c *catalog) hostCopy(h *HostCopyRecord, l HostLink, r *resolver) HostCopy {
	if h != nil {
		hc := HostCopy{H2D: value(r, "host_copy.h2d", h.H2D, true), D2H: value(r, "host_copy.d2h", h.D2H, true)}
		hc.Source = h.H2D.Ref
		return hc
	}
	bw := l.Bandwidth * units.BytesPerSecond(l.CopyFraction)
	src := fmt.Sprintf("PCIe Gen%d x16 line rate × %.2f (%s)", l.Gen, l.CopyFraction, l.Record.CopyFraction.Ref)
	r.sources = append(r.sources, "host_copy: derived: "+src)
	return HostCopy{H2D: bw, D2H: bw, Source: src}
}

func (c *catalog) resolveLink(l HostLinkRecord, r *resolver) HostLink {
	first := len(r.sources)
	h := HostLink{Name: l.Name, Gen: l.Gen, Record: l,
		Bandwidth:    value(r, "links."+l.Name+".bandwidth", l.Bandwidth, true),
		Latency:      value(r, "links."+l.Name+".latency", l.Latency, true),
		CopyFraction: value(r, "links."+l.Name+".copy_fraction", l.CopyFraction, true)}
	h.Sources = append([]string(nil), r.sources[first:]...)
	return h
}

func resolveNIC(cal map[string]calEntry, n NICRecord) (NIC, error) {
	r := &resolver{cal: cal}
	out := NIC{Name: n.Name, Kind: n.Kind, Record: n,
		Gbps:    value(r, "gbps", n.Gbps, true),
		Latency: value(r, "latency", n.Latency, true)}
	out.Bandwidth = units.BytesPerSecond(out.Gbps * 1e9 / 8)
	out.Comm.Efficiency = value(r, "efficiency", n.Efficiency, true)
	if !oneOf(n.Kind, "infiniband", "roce", "ethernet", "omnipath") {
		r.fail("kind: unknown value %q (valid: infiniband, roce, ethernet, omnipath)", n.Kind)
	}
	if r.err != nil {
		return NIC{}, fmt.Errorf("%s: %w", n.Name, r.err)
	}
	out.Sources = r.sources
	out.Comm.Sources = r.sources[len(r.sources)-1:]
	return out, nil
}

// inherit fills every figure, string and section that rec leaves out with
// parent's, marking the figures inherited. The peak FLOP/s are taken as a
// block: a record that gives any keeps its own (a part without FP4 must
// not inherit its reference's FP4 peak).
func inherit(rec *GPURecord, parent GPURecord) {
	keepPeak := false
	for _, f := range []figureish{&rec.Peak.FP32, &rec.Peak.TF32, &rec.Peak.FP16, &rec.Peak.BF16, &rec.Peak.FP8, &rec.Peak.FP4} {
		keepPeak = keepPeak || f.given()
	}
	peak := rec.Peak
	// the usable memory belongs to the device memory it was read on
	ownHBM := rec.HBMBytes.given() && !rec.HBMUsableBytes.given()
	fill(reflect.ValueOf(rec).Elem(), reflect.ValueOf(&parent).Elem(), parent.Name, true)
	if ownHBM {
		rec.HBMUsableBytes = Figure[units.Bytes]{}
	}
	if keepPeak {
		rec.Peak = peak
	}
	rec.Name = strings.TrimSpace(rec.Name)
}

var figureishType = reflect.TypeFor[figureish]()

// fill copies into dst what it leaves out of src; top is the record itself,
// whose name, description and reference are its own.
func fill(dst, src reflect.Value, from string, top bool) {
	switch {
	case dst.Kind() == reflect.Pointer:
		if src.IsNil() {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		fill(dst.Elem(), src.Elem(), from, false)
	case dst.Addr().Type().Implements(figureishType):
		d := dst.Addr().Interface().(figureish)
		if d.given() || !src.Addr().Interface().(figureish).given() {
			return
		}
		dst.Set(src)
		s := d.source()
		ref := s.Kind.String() + ": " + s.Ref
		if s.Kind == Fitted && s.Ref == "" {
			ref = "fitted (" + s.Fit + ")"
		}
		s.Kind, s.Ref = Inherited, from+" "+ref
	case dst.Kind() == reflect.Struct:
		for i := range dst.NumField() {
			if n := dst.Type().Field(i).Name; top && (n == "Name" || n == "Inherits" || n == "Description") {
				continue
			}
			fill(dst.Field(i), src.Field(i), from, false)
		}
	case dst.Kind() == reflect.String:
		if dst.String() == "" {
			dst.Set(src)
		}
	case dst.Kind() == reflect.Slice:
		if dst.Len() == 0 && src.Len() > 0 {
			n := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
			for i := range n.Len() {
				fill(n.Index(i), src.Index(i), from, false)
			}
			dst.Set(n)
		}
	}
}

func oneOf(s string, valid ...string) bool {
	for _, v := range valid {
		if s == v {
			return true
		}
	}
	return false
}

// InheritedFigures counts the figures the GPU took from its reference GPU
// (Inherits).
func (g GPU) InheritedFigures() int {
	n := 0
	for _, s := range g.Sources {
		if _, rest, ok := strings.Cut(s, ": "); ok && strings.HasPrefix(rest, Inherited.String()) {
			n++
		}
	}
	return n
}

// persistentGEMM says whether the BF16/FP8 GEMMs of a training step on a
// GPU of arch run as persistent kernels whose grid is one CTA per SM.
// Hopper: cuBLAS's sm90 GEMMs launch exactly the SM count, "my GEMM kernel
// launches 132 blocks" for [2500, 5120]×[5120, 5120] on H100 (NVIDIA
// developer forum thread 339078, nsys), as CUTLASS 3's sm90 persistent
// tile scheduler sizes the grid to the SMs
// (include/cutlass/gemm/kernel/sm90_tile_scheduler.hpp); thread 337991
// measures such a GEMM nearly doubling beside a 24-CTA all-gather.
// Ampere's sm80 kernels launch one CTA per output tile (CUTLASS 2's
// GemmIdentityThreadblockSwizzle grid), and Blackwell's sm100 kernels
// launch one CTA per tile cluster and let the running ones take over the
// rest (cluster launch control, CUTLASS 3.8+
// sm100_tile_scheduler.hpp), so a CTA without an SM waits only for the
// next free SM: the fluid rate. CDNA3 (hipBLASLt): not known, fluid.
func persistentGEMM(arch string) bool { return arch == "hopper" }
