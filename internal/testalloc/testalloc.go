// Package testalloc measures the allocations of code that runs on the
// kernels' worker pool.
//
// testing.AllocsPerRun counts every allocation of the process during the
// runs. A pool helper that parks (the machine is busy, a wait outlasts its
// spin) may make the runtime allocate a waiter record once, which is not an
// allocation of the code under test. An allocation of the code itself
// recurs in every measurement; so Steady takes the least of a few.
package testalloc

import "testing"

// Steady returns the least of three testing.AllocsPerRun(runs, f).
func Steady(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for i := 0; i < 2 && least > 0; i++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
