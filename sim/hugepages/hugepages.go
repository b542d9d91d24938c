// Package hugepages asks the operating system to back large slices with
// huge pages. It imports nothing of simtrain.
package hugepages

// huge is the size of the pages this package asks for: x86-64's 2 MiB.
const huge = 2 << 20
