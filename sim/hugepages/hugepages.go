// Package hugepages asks the operating system to back large slices with
// huge pages. It imports nothing of simtrain.
package hugepages
