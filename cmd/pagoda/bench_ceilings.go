package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"pagoda/kernels"
)

// ceilings are the machine limits measured in one run, for 1 and N threads.
type ceilings struct {
	Kernels   string    `json:"kernels"`    // implementation in use
	Threads   []int     `json:"threads"`    // thread counts measured
	ReadMiB   int       `json:"read_mib"`   // working set of the read probe
	ReadGBs   []float64 `json:"read_gbs"`   // memory read bandwidth, GB/s
	CacheGBs  []float64 `json:"cache_gbs"`  // read bandwidth of a 1 MiB (cache-resident) buffer
	FMAGFlops []float64 `json:"fma_gflops"` // float32 FMA peak, GFLOP/s
	DotGOps   []float64 `json:"dot_gops"`   // int8 dot-product peak, GOP/s
}

// at returns the index of the measured thread count closest to threads.
func (c *ceilings) at(threads int) int {
	best := 0
	for i, t := range c.Threads {
		if abs(t-threads) < abs(c.Threads[best]-threads) {
			best = i
		}
	}
	return best
}

func abs(x int) int { return max(x, -x) }

// measureCeilings probes bandwidth over readMiB MiB and the instruction
// peaks on each thread count. Each probe runs for a few hundred
// milliseconds.
func measureCeilings(threads []int, readMiB int) *ceilings {
	c := &ceilings{Kernels: kernels.Implementation(), Threads: threads, ReadMiB: readMiB}
	size := readMiB << 20
	reps := max(2, int(3e9)/size)
	for _, t := range threads {
		c.ReadGBs = append(c.ReadGBs, kernels.ReadBandwidth(t, size, reps)/1e9)
		c.CacheGBs = append(c.CacheGBs, kernels.ReadBandwidth(t, t<<20, 2000)/1e9)
		c.FMAGFlops = append(c.FMAGFlops, kernels.PeakFMA(t, 20_000_000)/1e9)
		c.DotGOps = append(c.DotGOps, kernels.PeakDot(t, 20_000_000)/1e9)
	}
	return c
}

// print writes the ceilings as a table.
func (c *ceilings) print(w io.Writer) {
	fmt.Fprintf(w, "ceilings (kernels %s, GOMAXPROCS %d)\n", c.Kernels, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "| threads | read GB/s (%d MiB) | read GB/s (1 MiB/thread) | f32 FMA GFLOP/s | int8 dot GOP/s |\n", c.ReadMiB)
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: |")
	for i, t := range c.Threads {
		fmt.Fprintf(w, "| %d | %.1f | %.1f | %.0f | %.0f |\n", t, c.ReadGBs[i], c.CacheGBs[i], c.FMAGFlops[i], c.DotGOps[i])
	}
}

// runBenchCeilings implements `pagoda bench ceilings`: the machine's memory
// read bandwidth and peak float32 FMA and int8 dot-product throughput on 1
// and N threads, measured in the same run.
func runBenchCeilings(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench ceilings", stdout)
	threads := fs.String("threads", "", "comma-separated thread counts (default 1 and GOMAXPROCS)")
	readMiB := fs.Int("read-mib", 1024, "working set of the memory bandwidth probe, MiB")
	outJSON := fs.String("output-json", "", outputJSONFlagHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ts, err := parseThreads(*threads)
	if err != nil {
		return err
	}
	if *readMiB < 1 {
		return usageError{fmt.Errorf("--read-mib must be ≥ 1, got %d", *readMiB)}
	}
	c := measureCeilings(ts, *readMiB)
	c.print(stdout)
	return writeJSON(*outJSON, c)
}

// parseThreads parses a comma-separated list of positive thread counts;
// empty means 1 and GOMAXPROCS.
func parseThreads(s string) ([]int, error) {
	if s == "" {
		if n := runtime.GOMAXPROCS(0); n > 1 {
			return []int{1, n}, nil
		}
		return []int{1}, nil
	}
	var ts []int
	for _, f := range strings.Split(s, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t < 1 || t > 1024 {
			return nil, usageError{fmt.Errorf("--threads: %q is not a thread count in 1..1024", f)}
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// writeJSON writes v to path as indented JSON; an empty path writes nothing.
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
