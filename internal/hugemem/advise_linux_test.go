package hugemem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestHugePagesBacked: where the kernel offers transparent huge pages
// ("always" or "madvise"), a Slice's touched memory is backed by them.
func TestHugePagesBacked(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Logf("transparent huge pages unavailable here (%q, %v): checking the advice is harmless only", mode, err)
	}
	s := Slice[byte](8 * PageSize)
	for i := 0; i < len(s); i += 4096 {
		s[i] = 1
	}
	kb, err := anonHugeKB(uintptr(unsafe.Pointer(&s[0])))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mode), "[never]") && kb < 2048 {
		t.Fatalf("a touched 16 MiB Slice has %d KiB of huge pages, want at least one (THP mode %q)", kb, strings.TrimSpace(string(mode)))
	}
	t.Logf("%d KiB of the 16 MiB Slice in huge pages", kb)
}

// anonHugeKB is the AnonHugePages of the mapping holding addr.
func anonHugeKB(addr uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			var lo, hi uintptr
			if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err == nil {
				in = lo <= addr && addr < hi
			}
			continue
		}
		var kb int
		if in {
			if n, _ := fmt.Sscanf(line, "AnonHugePages: %d kB", &kb); n == 1 {
				return kb, nil
			}
		}
	}
	return 0, fmt.Errorf("no mapping holds %#x in /proc/self/smaps", addr)
}
