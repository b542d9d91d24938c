package simulation

import (
	"iter"
	"maps"
)

// priceMemo is a price table's memo of answers (priceTables.costs,
// sendCosts): the answers it found itself (own) and those of the tables it
// was copied from (base, read-only and shared: nil when none), never the
// same key in both (set is for a key get did not find). A table's copies
// (priceTables.clone: the copy a worker offers other workers, and the copy
// each takes) share their answers as a base instead of copying them:
// those copies were ≈ 160 KB of fresh memory over the 1,000-point 70B
// sweep, most of it these two memos (docs/design.md "Speed", emit52).
type priceMemo[K comparable, V any] struct {
	own  map[K]V
	base map[K]V // never written once it is a base
}

// get is the answer for k. The base is read first: a copied table's
// answers are mostly its base's, and a miss in a map that is not empty
// costs a hash (cachegrind: own first cost +1.5 M instructions on the
// 70B sweep; looking first where the last answer was found, +0.1 M more
// than base first).
func (m *priceMemo[K, V]) get(k K) (V, bool) {
	if v, ok := m.base[k]; ok {
		return v, true
	}
	v, ok := m.own[k]
	return v, ok
}

// set records the answer for k, which get did not find (in own: the base
// is never written).
func (m *priceMemo[K, V]) set(k K, v V) {
	if m.own == nil {
		m.own = map[K]V{}
	}
	m.own[k] = v
}

// all is every answer.
func (m *priceMemo[K, V]) all() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for _, part := range [2]map[K]V{m.base, m.own} {
			for k, v := range part {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// copy returns a memo with m's answers that its owner may add to without
// touching m, sharing m's answers as its base: m's own answers become a
// base m shares too (m itself then adds to a new own), so that copy writes
// m only when m holds answers of its own, and reads it otherwise (the
// tables a PriceShare keeps, copied by many workers at once, hold none).
// Only where m has answers of both kinds are they merged into a new map.
func (m *priceMemo[K, V]) copy() priceMemo[K, V] {
	switch {
	case len(m.own) == 0:
		return priceMemo[K, V]{base: m.base}
	case len(m.base) == 0:
		m.base, m.own = m.own, nil
	default:
		merged := maps.Clone(m.base)
		maps.Copy(merged, m.own)
		m.base, m.own = merged, nil
	}
	return priceMemo[K, V]{base: m.base}
}
