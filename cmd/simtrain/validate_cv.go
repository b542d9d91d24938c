package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/calibration"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/validation"
)

// crossValidation is validate --cv's outcome: the out-of-sample MAPE over
// every row and per held-out group.
type crossValidation struct {
	kind  string
	all   float64
	folds []cvFold
}

type cvFold struct {
	group string
	rows  int
	mape  float64
	// refit is the values refit without the group, name=value.
	refit map[string]string
}

// fold returns the held-out fold of group (false when cv is nil or holds
// no such fold).
func (cv *crossValidation) fold(group string) (cvFold, bool) {
	if cv == nil {
		return cvFold{}, false
	}
	for _, f := range cv.folds {
		if f.group == group {
			return f, true
		}
	}
	return cvFold{}, false
}

// runCrossValidation leaves each source group of rows out in turn
// (calibration.Problem.CrossValidate).
func runCrossValidation(ctx context.Context, rows []validation.Case, o validateOptions, overrides []scenario.Override) (*crossValidation, error) {
	p, err := calibration.FromCases(rows, o.budget.budget(), o.workers, overrides)
	if err != nil {
		return nil, err
	}
	folds, err := p.CrossValidate(ctx)
	if err != nil {
		return nil, err
	}
	cv := &crossValidation{kind: o.cv}
	var sum float64
	n := 0
	for _, f := range folds {
		fo := cvFold{group: f.Group, refit: map[string]string{}}
		var s float64
		for _, out := range f.Outcomes {
			if out.OK {
				s += math.Abs(out.Err)
				fo.rows++
			}
		}
		if fo.rows > 0 {
			fo.mape = s / float64(fo.rows)
		}
		for i, q := range p.Params {
			fo.refit[q.Name] = f.Values[i]
		}
		sum += s
		n += fo.rows
		cv.folds = append(cv.folds, fo)
	}
	if n > 0 {
		cv.all = sum / float64(n)
	}
	return cv, nil
}

// printCrossValidation prints in-sample and out-of-sample MAPE side by
// side per source group, and the values refit without each; nothing
// without --cv.
func printCrossValidation(w io.Writer, sum validation.Summary, cv *crossValidation) {
	if cv == nil {
		return
	}
	fmt.Fprintf(w, "\nleave-one-source-out (refit without the group, scored on it)\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "group\trows\tin-sample MAPE\tout-of-sample MAPE\trefit without it\t")
	for _, ns := range sum.Groups[0] {
		f, ok := cv.fold(ns.Name)
		if !ok {
			continue
		}
		var refit []string
		for _, q := range slices.Sorted(maps.Keys(f.refit)) {
			refit = append(refit, q+"="+f.refit[q])
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f%%\t%.2f%%\t%s\t\n", ns.Name, ns.Simulated, 100*ns.MAPE, 100*f.mape, strings.Join(refit, " "))
	}
	fmt.Fprintf(tw, "all\t%d\t%.2f%%\t%.2f%%\t\t\n", sum.All.Simulated, 100*sum.All.MAPE, 100*cv.all)
	tw.Flush()
}
