// Package hugepages gives the operating system advice on the pages under
// large slices: back them with huge pages (Advise), or map them now in one
// call rather than one fault at a time (Populate). It imports nothing of
// simtrain.
package hugepages
