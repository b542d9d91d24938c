package main

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/simulation"
)

// budgetFlags are --max-tasks and --max-memory, the override of the work
// budget (simulation.Budget) that every simulating command takes.
type budgetFlags struct {
	maxTasks, maxMemory string
	parsed              simulation.Budget
}

func (b *budgetFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&b.maxTasks, "max-tasks", "", fmt.Sprintf("refuse a simulation estimated to play more rank-tasks than this, e.g. 2e9 (default %.0e)", float64(simulation.DefaultMaxTasks)))
	f.StringVar(&b.maxMemory, "max-memory", "", fmt.Sprintf("refuse a simulation estimated to need more memory than this, e.g. 32G (default %dG)", simulation.DefaultMaxMemoryBytes>>30))
}

// check parses the flags; call it before budget.
func (b *budgetFlags) check() error {
	if b.maxTasks != "" {
		v, err := parseCount(b.maxTasks)
		if err != nil || v < 1 || v > math.MaxInt64/2 {
			return usageErrorf("--max-tasks: %q is not a task count (e.g. 1e9, 500M)", clipFlag(b.maxTasks))
		}
		b.parsed.MaxTasks = int64(v)
	}
	if b.maxMemory != "" {
		v, err := parseSize(b.maxMemory)
		if err != nil {
			return usageErrorf("--max-memory: %v", err)
		}
		b.parsed.MaxMemoryBytes = v
	}
	return nil
}

func (b *budgetFlags) budget() simulation.Budget { return b.parsed }

// checkFinite fails when a result to print holds a NaN or an infinity (an
// input far outside what the formulas were made for): simtrain never prints
// +Inf as if it were a figure. v is a struct, a map or a slice of them; the
// error names the first non-finite field.
func checkFinite(v any) error {
	if name, ok := firstNonFinite(reflect.ValueOf(v), ""); !ok {
		return usageErrorf("the result %s is not a finite number: the inputs are outside the range the model covers", name)
	}
	return nil
}

func firstNonFinite(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return "", true
		}
		return firstNonFinite(v.Elem(), path)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%s (%v)", path, f), false
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			name := t.Field(i).Name
			if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
				name = tag
			}
			if n, ok := firstNonFinite(v.Field(i), fieldPath(path, name)); !ok {
				return n, false
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		var bad []string
		for iter.Next() {
			if n, ok := firstNonFinite(iter.Value(), fieldPath(path, fmt.Sprint(iter.Key().Interface()))); !ok {
				bad = append(bad, n)
			}
		}
		if len(bad) > 0 {
			// Map order is random: report the smallest name.
			first := bad[0]
			for _, b := range bad[1:] {
				first = min(first, b)
			}
			return first, false
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if n, ok := firstNonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); !ok {
				return n, false
			}
		}
	}
	return "", true
}

func fieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
