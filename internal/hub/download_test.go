package hub_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pagoda/internal/hub"
	"pagoda/internal/hub/hubtest"
)

// blob is n deterministic pseudo-random bytes.
func blob(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// setup starts a fake hub with repos and a client caching into a temporary
// directory.
func setup(t *testing.T, repos map[string]*hubtest.Repo) (*hubtest.Hub, *hub.Client) {
	t.Helper()
	h := hubtest.New(repos)
	t.Cleanup(h.Close)
	return h, &hub.Client{Endpoint: h.URL, Dir: filepath.Join(t.TempDir(), "hf")}
}

func mustResolve(t *testing.T, c *hub.Client, ref string) string {
	t.Helper()
	r, err := hub.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Resolve(context.Background(), r)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", ref, err)
	}
	return p
}

func resolveErr(c *hub.Client, ref string) error {
	r, err := hub.ParseRef(ref)
	if err != nil {
		return err
	}
	_, err = c.Resolve(context.Background(), r)
	return err
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d served", path, len(got), len(want))
	}
	if _, err := os.Stat(path + ".part"); !os.IsNotExist(err) {
		t.Fatalf("%s.part left behind (%v)", path, err)
	}
}

// count returns how many logged requests of server have path suffix.
func count(h *hubtest.Hub, server, suffix string) int {
	n := 0
	for _, r := range h.Log() {
		if r.Server == server && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// TestResolveQuantThroughCDN picks the file by quantization from the
// listing, follows the hub's redirect to its CDN, verifies the sha256 of
// X-Linked-Etag, and then answers from the cache without the network.
func TestResolveQuantThroughCDN(t *testing.T) {
	q8, q4 := blob(300_000, 1), blob(200_000, 2)
	h, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{
		"README.md": {Data: []byte("hi")}, "mmproj-Q8_0.gguf": {Data: []byte("x")},
		"m-Q8_0.gguf": {Data: q8}, "m-Q4_K_M.gguf": {Data: q4}}}})
	p := mustResolve(t, c, "org/repo:q8_0")
	if want := filepath.Join(c.Dir, "org", "repo", "m-Q8_0.gguf"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	checkFile(t, p, q8)
	if count(h, "hub", "/api/models/org/repo") != 1 || count(h, "cdn", "/m-Q8_0.gguf") != 1 {
		t.Fatalf("requests: %+v", h.Log())
	}
	// With only Q8_0 cached, org/repo is that file (no network); the hub's
	// default Q4_K_M comes when asked for.
	checkFile(t, mustResolve(t, c, "org/repo"), q8)
	checkFile(t, mustResolve(t, c, "org/repo:Q4_K_M"), q4)
	checkFile(t, mustResolve(t, c, "org/repo"), q4)
	before := len(h.Log())
	for _, ref := range []string{"org/repo:Q8_0", "org/repo/m-Q8_0.gguf", "org/repo"} {
		mustResolve(t, c, ref)
	}
	if n := len(h.Log()); n != before {
		t.Fatalf("cached references made %d requests", n-before)
	}
}

// TestResolveRelativeRedirect follows a redirect to another path of the
// hub, whose ETag carries the sha256, and keeps the token on that host
// while never sending it to the CDN.
func TestResolveRelativeRedirect(t *testing.T) {
	small, big := blob(5000, 3), blob(70_000, 4)
	h, c := setup(t, map[string]*hubtest.Repo{"org/gated": {Gated: true, Files: map[string]*hubtest.File{
		"sub/small.gguf": {Data: small, Direct: true}, "big.gguf": {Data: big}}}})
	if err := resolveErr(c, "org/gated/sub/small.gguf"); !errors.Is(err, hub.ErrAccess) {
		t.Fatalf("gated repo without a token: %v, want ErrAccess", err)
	}
	if err := resolveErr(c, "org/gated:Q4_0"); !errors.Is(err, hub.ErrAccess) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("gated listing without a token: %v", err)
	}
	c.Token = h.Token
	checkFile(t, mustResolve(t, c, "org/gated/sub/small.gguf"), small)
	checkFile(t, mustResolve(t, c, "org/gated/big.gguf"), big)
	for _, r := range h.Log()[2:] {
		if hasTok := r.Authorization == "Bearer "+h.Token; hasTok != (r.Server == "hub") {
			t.Errorf("%s %s: Authorization %q", r.Server, r.Path, r.Authorization)
		}
	}
	if count(h, "hub", "/api/resolve-cache/models/org/gated/main/sub/small.gguf") != 1 {
		t.Fatalf("relative redirect not followed: %+v", h.Log())
	}
}

// TestResolveResumes resumes a body cut off mid-way with a Range request,
// and a .part left by an earlier run.
func TestResolveResumes(t *testing.T) {
	cut, old := blob(400_000, 5), blob(100_000, 6)
	h, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{
		"cut.gguf": {Data: cut, InterruptOnce: true}, "old.gguf": {Data: old}}}})
	checkFile(t, mustResolve(t, c, "org/repo/cut.gguf"), cut)
	var ranges []string
	for _, r := range h.Log() {
		if r.Server == "cdn" {
			ranges = append(ranges, r.Range)
		}
	}
	if len(ranges) != 2 || ranges[0] != "" || !strings.HasPrefix(ranges[1], "bytes=") || ranges[1] == "bytes=0-" {
		t.Fatalf("CDN ranges %q: want a whole GET, then a resumed one", ranges)
	}
	dest := c.Path("org/repo", "old.gguf")
	if err := os.WriteFile(dest+".part", old[:12345], 0o644); err != nil {
		t.Fatal(err)
	}
	checkFile(t, mustResolve(t, c, "org/repo/old.gguf"), old)
	if l := h.Log(); l[len(l)-1].Range != "bytes=12345-" {
		t.Fatalf("last request %+v: want a range from the .part's size", l[len(l)-1])
	}
}

// TestResolveRestartsWhenRangeIgnored starts over when a server answers a
// Range request with the whole file, and when the .part is not a prefix of
// the file (the sha256 then fails, the .part is removed, a rerun works).
func TestResolveRestartsWhenRangeIgnored(t *testing.T) {
	data := blob(50_000, 7)
	_, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{
		"a.gguf": {Data: data, IgnoreRange: true}, "b.gguf": {Data: data}}}})
	dest := c.Path("org/repo", "a.gguf")
	os.MkdirAll(filepath.Dir(dest), 0o755)
	os.WriteFile(dest+".part", bytes.Repeat([]byte{1}, 999), 0o644)
	checkFile(t, mustResolve(t, c, "org/repo/a.gguf"), data)
	dest = c.Path("org/repo", "b.gguf")
	os.WriteFile(dest+".part", bytes.Repeat([]byte{1}, 999), 0o644)
	if err := resolveErr(c, "org/repo/b.gguf"); !errors.Is(err, hub.ErrChecksum) {
		t.Fatalf("foreign .part: %v, want ErrChecksum", err)
	}
	checkFile(t, mustResolve(t, c, "org/repo/b.gguf"), data)
}

// TestResolveCorrupt refuses a body whose sha256 is not the announced one
// and leaves neither the file nor its .part.
func TestResolveCorrupt(t *testing.T) {
	for _, direct := range []bool{false, true} {
		_, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{
			"m-Q8_0.gguf": {Data: blob(30_000, 8), Corrupt: true, Direct: direct}}}})
		err := resolveErr(c, "org/repo:Q8_0")
		if !errors.Is(err, hub.ErrChecksum) {
			t.Fatalf("direct=%v: %v, want ErrChecksum", direct, err)
		}
		dest := c.Path("org/repo", "m-Q8_0.gguf")
		for _, p := range []string{dest, dest + ".part"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("%s exists after a checksum failure", p)
			}
		}
	}
}

func TestResolveErrors(t *testing.T) {
	_, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{
		"m-Q8_0.gguf": {Data: []byte("GGUF")}, "s-00001-of-00002.gguf": {Data: []byte("a")}}},
		"org/evil": {Files: map[string]*hubtest.File{"../../m-Q8_0.gguf": {Data: []byte("GGUF")}}}})
	for ref, want := range map[string]string{
		"org/evil:Q8_0":                  "the hub lists file \"../../m-Q8_0.gguf\": empty, . or .. component",
		"org/none":                       "no such repo",
		"org/repo/x.gguf":                "no such file",
		"org/repo:Q5_K_M":                `no GGUF model file matches "Q5_K_M"; the repo has: m-Q8_0.gguf, s-00001-of-00002.gguf`,
		"org/repo/s-00001-of-00002.gguf": "s-00002-of-00002.gguf: no such file",
	} {
		if err := resolveErr(c, ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", ref, err, want)
		}
	}
}

// TestResolveSplit fetches every part of a split GGUF and returns the first.
func TestResolveSplit(t *testing.T) {
	p1, p2, p3 := blob(10_000, 9), blob(10_000, 10), blob(5, 11)
	h, c := setup(t, map[string]*hubtest.Repo{"org/big": {Files: map[string]*hubtest.File{
		"Q6_K/m-Q6_K-00001-of-00003.gguf": {Data: p1}, "Q6_K/m-Q6_K-00002-of-00003.gguf": {Data: p2},
		"Q6_K/m-Q6_K-00003-of-00003.gguf": {Data: p3}, "m-Q8_0.gguf": {Data: p3}}}})
	p := mustResolve(t, c, "org/big:Q6_K")
	checkFile(t, p, p1)
	checkFile(t, c.Path("org/big", "Q6_K/m-Q6_K-00002-of-00003.gguf"), p2)
	checkFile(t, c.Path("org/big", "Q6_K/m-Q6_K-00003-of-00003.gguf"), p3)
	os.Remove(c.Path("org/big", "Q6_K/m-Q6_K-00002-of-00003.gguf"))
	n := len(h.Log())
	if q := mustResolve(t, c, "org/big/Q6_K/m-Q6_K-00003-of-00003.gguf"); q != p {
		t.Fatalf("a part's reference resolves to %s, want the first part %s", q, p)
	}
	if got := count(h, "cdn", "00002-of-00003.gguf"); got != 2 || len(h.Log()) != n+2 {
		t.Fatalf("want only the missing part fetched again: %+v", h.Log()[n:])
	}
}

// TestOffline answers from the cache and never touches the network.
func TestOffline(t *testing.T) {
	data := blob(1000, 12)
	h, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{"m-Q8_0.gguf": {Data: data}}}})
	c.Offline = true
	for _, ref := range []string{"org/repo:Q8_0", "org/repo/m-Q8_0.gguf", "org/repo"} {
		if err := resolveErr(c, ref); !errors.Is(err, hub.ErrOffline) {
			t.Fatalf("%s offline: %v, want ErrOffline", ref, err)
		}
	}
	if n := len(h.Log()); n != 0 {
		t.Fatalf("offline client made %d requests", n)
	}
	c.Offline = false
	mustResolve(t, c, "org/repo:Q8_0")
	c.Offline = true
	checkFile(t, mustResolve(t, c, "org/repo"), data)
}

// TestProgressOutput draws the progress line on a terminal, and only a
// start and an end line otherwise.
func TestProgressOutput(t *testing.T) {
	for _, tty := range []bool{true, false} {
		_, c := setup(t, map[string]*hubtest.Repo{"org/repo": {Files: map[string]*hubtest.File{"m.gguf": {Data: blob(100_000, 13)}}}})
		var b bytes.Buffer
		c.Progress, c.TTY = &b, tty
		mustResolve(t, c, "org/repo/m.gguf")
		out := b.String()
		drawn := strings.Contains(out, "\rorg/repo/m.gguf  ") && strings.Contains(out, "ETA")
		if drawn != tty || !strings.HasSuffix(out, "/s)\n") || !strings.Contains(out, "org/repo/m.gguf: 97.7 KiB in ") {
			t.Errorf("tty=%v: output %q", tty, out)
		}
		if !tty && !strings.HasPrefix(out, "downloading org/repo/m.gguf (97.7 KiB)\n") {
			t.Errorf("plain output %q", out)
		}
	}
}
