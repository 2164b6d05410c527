//go:build !race

package llama

// raceEnabled shortens the slowest model tests under the race detector;
// the plain run covers them in full.
const raceEnabled = false
