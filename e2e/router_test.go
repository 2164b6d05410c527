package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pagoda/internal/testmodel"
)

// routerVersion is the vLLM router (vllm-router on the package index) the
// replica test runs in front of pagoda.
const routerVersion = "0.1.17"

// TestReplicasBehindRouter runs two `pagoda serve` replicas of stories260K
// behind vLLM's router with its prefix-aware policy (cache_aware): every
// request of a mixed load is answered, both replicas serve some, and
// requests sharing a long prefix land where that prefix is cached (the
// replicas' vllm:prefix_cache_hits_total over queries).
func TestReplicasBehindRouter(t *testing.T) {
	router := routerBin(t)
	bin := buildPagoda(t)
	model := testmodel.Stories(t)
	var replicas []string
	for range 2 {
		port := freePort(t)
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		srv := startProcess(t, "pagoda serve", exec.Command(bin, "serve", model, "--port", strconv.Itoa(port),
			"--max-model-len", "512", "--kv-cache-memory", "64MiB", "--enforce-eager", "--shutdown-timeout", "5s"))
		waitHealthy(t, base, srv)
		replicas = append(replicas, base)
	}
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	rt := startProcess(t, "vllm-router", exec.Command(router, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--prometheus-port", strconv.Itoa(freePort(t)), "--policy", "cache_aware",
		"--worker-urls", replicas[0], replicas[1]))
	waitHealthy(t, base, rt)

	// 4 groups of 8 requests sharing a 60-token prefix, and 16 unrelated ones, 8 at a time.
	stories := []string{"Once upon a time there was a little girl named Lily who loved to play in the park with her dog",
		"One day a big red bird flew over the tall green tree and saw a small boy who was sad and alone",
		"Tom and his mom went to the market to buy apples and bread and they met a friendly old man there",
		"The sun was hot and the children ran to the lake to swim with the ducks and the fish all day long"}
	var prompts []string
	for g, s := range stories {
		for i := range 8 {
			prompts = append(prompts, fmt.Sprintf("%s. %s. Then number %d said", s, s, g*8+i))
		}
	}
	for i := range 16 {
		prompts = append(prompts, fmt.Sprintf("Story %d: a cat", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(prompts))
	sem := make(chan struct{}, 8)
	for _, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- complete(base, p)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	served, hits, queries := 0.0, 0.0, 0.0
	for i, r := range replicas {
		m := scrapeMetrics(t, r)
		n := m[`vllm:request_success_total{engine="0",finished_reason="length",model_name="stories260K"}`]
		if n == 0 {
			t.Errorf("replica %d served no request", i)
		}
		served += n
		hits += m[`vllm:prefix_cache_hits_total{engine="0",model_name="stories260K"}`]
		queries += m[`vllm:prefix_cache_queries_total{engine="0",model_name="stories260K"}`]
		t.Logf("replica %d served %.0f requests", i, n)
	}
	if int(served) != len(prompts) {
		t.Fatalf("the replicas served %.0f of %d requests", served, len(prompts))
	}
	// Each group's first request misses; with perfect affinity the other 7
	// hit their ~60-token prefix (3 full blocks of 16).
	t.Logf("prefix cache: %.0f of %.0f queried tokens hit (%.1f%%)", hits, queries, 100*hits/queries)
	if hits == 0 {
		t.Fatal("no request hit the prefix cache: requests sharing a prefix did not meet")
	}
}

// complete sends one completion through the router.
func complete(base, prompt string) error {
	body, _ := json.Marshal(map[string]any{"model": "stories260K", "prompt": prompt, "max_tokens": 4, "ignore_eos": true})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 {
		return fmt.Errorf("prompt %q: status %d, %v, %+v", prompt, resp.StatusCode, err, out)
	}
	return nil
}

var metricLine = regexp.MustCompile(`^(\S+) (\S+)$`)

// scrapeMetrics reads a /metrics exposition into series → value.
func scrapeMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if g := metricLine.FindStringSubmatch(sc.Text()); g != nil && !strings.HasPrefix(g[1], "#") {
			m[g[1]], _ = strconv.ParseFloat(g[2], 64)
		}
	}
	return m
}

// routerBin returns vllm-router from a virtual environment it installs
// once (under the temporary directory, keyed by version). It fails (does
// not skip) without python3, venv or pip.
func routerBin(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "pagoda-e2e-venv-vllm-router-"+routerVersion)
	bin := filepath.Join(dir, "bin", "vllm-router")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is missing: the replica test needs python3 with venv and pip (make deps)")
	}
	os.RemoveAll(dir)
	for _, args := range [][]string{{"python3", "-m", "venv", dir},
		{filepath.Join(dir, "bin", "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
			"vllm-router==" + routerVersion}} {
		start := time.Now()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		t.Logf("%v: %v", args[len(args)-1], time.Since(start).Round(time.Millisecond))
	}
	return bin
}
