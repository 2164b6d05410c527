//go:build race

package kernels

// raceEnabled: under the race detector forEachImpl runs only the
// implementation in use. The race pass looks for races in the pool and the
// fused jobs, whose Go code every implementation shares; the plain run
// checks each implementation's arithmetic.
const raceEnabled = true
