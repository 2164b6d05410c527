//go:build !race

package engine

// raceEnabled shortens the slowest workloads under the race detector,
// which slows the kernels' Go code tenfold; the plain run covers them in
// full.
const raceEnabled = false
