// Package htmlreport renders simtrain's results as one self-contained HTML
// page: `simtrain report DIR` and `simtrain run --report` write it as
// report.html.
//
// A run's report holds the summary, the Gantt chart of the first simulated
// step (one row per rank and stream), the peak memory per pipeline stage and
// the utilisation of every link; a sweep's report holds the Pareto plot of
// step time against cost and the tables of its layouts. Every chart is
// inline SVG built here, styles and the one small script (sortable tables)
// are inline too, so the page opens offline from a file and renders the same
// anywhere. Same inputs, same bytes.
//
// Sizes are bounded whatever the run: the Gantt chart samples at most
// [MaxGanttRanks] ranks and draws at most one rectangle per pixel and row,
// the memory chart at most 64 stages, the heatmap at most 1,024 cells per
// link kind, the Pareto plot at most 20,000 points and the tables 500 rows.
package htmlreport
