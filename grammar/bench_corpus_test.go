package grammar

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchCase is a schema and an instance of it to generate.
type benchCase struct {
	Name     string          `json:"name"`
	Schema   json.RawMessage `json:"schema"`
	Instance json.RawMessage `json:"instance"`
}

// benchCorpus is testdata/bench-schemas.json (schemas of the kinds people write, each with
// an instance), or with $PAGODA_SCHEMA_CORPUS a maskbench directory: each schema that
// compiles, with its first valid instance.
func benchCorpus(tb testing.TB) []benchCase {
	var out []benchCase
	dir := os.Getenv("PAGODA_SCHEMA_CORPUS")
	if dir == "" {
		data, err := os.ReadFile("testdata/bench-schemas.json")
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(data, &out); err != nil {
			tb.Fatal(err)
		}
		return out
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var cc corpusCase
		if err := json.Unmarshal(data, &cc); err != nil {
			tb.Fatal(err)
		}
		for _, tc := range cc.Tests {
			if tc.Valid {
				out = append(out, benchCase{filepath.Base(f), cc.Schema, tc.Data})
				break
			}
		}
	}
	return out
}

// BenchmarkSchemaCorpus measures, over a corpus of schemas and one instance each (written
// with Python's separators and tokenized by the vocabulary's tokenizer), the time to
// compile a schema (FromJSONSchema and Compile) and the time of each FillMask while the
// instance is generated token by token, each schema in a fresh Compiled: a first request,
// whose masks are computed as its states are met. Reports the percentiles over all
// schemas and steps, of wall time and (compile-cpu, mask-cpu) of the thread's CPU time.
func BenchmarkSchemaCorpus(b *testing.B) {
	for _, v := range []struct {
		name string
		load func(testing.TB) defaultModel
	}{{"smollm2", loadDefault}, {"llama-bpe", loadLlamaBPE}} {
		b.Run(v.name, func(b *testing.B) {
			dm := v.load(b)
			cases := benchCorpus(b)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var t benchTimes
			refused := 0
			for b.Loop() {
				t, refused = benchTimes{}, 0
				for _, cs := range cases {
					if !runBenchCase(b, dm, cs, &t) {
						refused++
					}
				}
			}
			if refused > 0 {
				b.Logf("%d of %d schemas refused or their instance refused", refused, len(cases))
			}
			reportPercentiles(b, "compile", t.compile, 50, 99)
			reportPercentiles(b, "compile-cpu", t.compileCPU, 50, 99)
			reportPercentiles(b, "mask", t.mask, 50, 99, 99.9)
			reportPercentiles(b, "mask-cpu", t.maskCPU, 50, 99, 99.9)
		})
	}
}

// benchTimes are the durations measured: wall times, and the thread's CPU time of each
// mask (the machine may be shared: other processes lengthen wall times, not CPU times).
type benchTimes struct {
	compile, compileCPU, mask, maskCPU []time.Duration
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// runBenchCase compiles cs and generates its instance, appending the times.
func runBenchCase(b *testing.B, dm defaultModel, cs benchCase, t *benchTimes) bool {
	t0, cpu0 := time.Now(), threadCPU()
	g, err := FromJSONSchema(cs.Schema, false)
	if err != nil {
		if os.Getenv("PAGODA_SCHEMA_CORPUS") == "" {
			b.Fatalf("%s: %v", cs.Name, err)
		}
		return false
	}
	c := Compile(g, dm.vocab)
	t.compile = append(t.compile, time.Since(t0))
	t.compileCPU = append(t.compileCPU, threadCPU()-cpu0)
	v, err := parseJSON(cs.Instance)
	if err != nil {
		b.Fatal(err)
	}
	m := c.NewMatcher()
	mask := make([]uint64, (dm.vocab.Size()+63)/64)
	ids := dm.tok.Encode(spaced(v), false, false)
	for i := 0; i <= len(ids); i++ {
		w, cpu := time.Now(), threadCPU()
		m.FillMask(mask)
		t.maskCPU = append(t.maskCPU, threadCPU()-cpu)
		t.mask = append(t.mask, time.Since(w))
		if i == len(ids) {
			break
		}
		if err := m.Accept(ids[i]); err != nil {
			if os.Getenv("PAGODA_SCHEMA_CORPUS") == "" {
				b.Fatalf("%s: %v", cs.Name, err)
			}
			return false
		}
	}
	return true
}

// reportPercentiles reports the given percentiles of ds, in µs.
func reportPercentiles(b *testing.B, what string, ds []time.Duration, ps ...float64) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	for _, p := range ps {
		i := min(len(ds)-1, int(float64(len(ds))*p/100))
		b.ReportMetric(float64(ds[i].Nanoseconds())/1e3, fmt.Sprintf("%s-p%g-µs", what, p))
	}
}
