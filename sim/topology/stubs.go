package topology

import "github.com/simtrain/simtrain/sim/engine"

// STUBS — the topology implementation replaces these bodies.

// LookupGPU returns the catalog entry; the error lists valid names.
func LookupGPU(name string) (GPU, error) { panic("TODO") }

// LookupNIC returns the catalog entry; the error lists valid names.
func LookupNIC(name string) (NIC, error) { panic("TODO") }

// GPUNames and NICNames list the catalog keys in sorted order.
func GPUNames() []string { panic("TODO") }
func NICNames() []string { panic("TODO") }

// Build validates s, fills defaults and builds the cluster. Errors name the field.
func Build(s Spec) (*Cluster, error) { panic("TODO") }

// NumGPUs, Nodes, GPUsPerNode describe the built cluster.
func (c *Cluster) NumGPUs() int     { panic("TODO") }
func (c *Cluster) Nodes() int       { panic("TODO") }
func (c *Cluster) GPUsPerNode() int { panic("TODO") }

// NodeOf is the node (server) index of GPU rank r.
func (c *Cluster) NodeOf(r int) int { panic("TODO") }

// DomainOf is the scale-up (NVLink) domain of GPU rank r: GPUs in one domain
// talk over NVLink/NVSwitch; between domains traffic goes through NICs. For
// HGX nodes a domain is a node; for NVL72 it is a 72-GPU rack.
func (c *Cluster) DomainOf(r int) int { panic("TODO") }

// NICBandwidthPerGPU is the scale-out line rate available to one GPU, bytes/s
// per direction (nics_per_node * nic bandwidth / gpus_per_node).
func (c *Cluster) NICBandwidthPerGPU() float64 { panic("TODO") }

// AppendRoute appends to dst the directed link ids from GPU rank src to GPU
// rank dst and returns the extended slice. Deterministic: equal-cost paths are
// chosen by hash (ECMP), never by map order. src == dst gives an empty route.
func (c *Cluster) AppendRoute(dst []int32, src, dstGPU int, hash uint64) []int32 { panic("TODO") }

// Bandwidths and Latencies return per-directed-link arrays indexed by link id
// (for sim/network).
func (c *Cluster) Bandwidths() []float64    { panic("TODO") }
func (c *Cluster) Latencies() []engine.Time { panic("TODO") }
