//go:build !amd64 || noasm

package kernels

// accelerated returns the CPU-specific implementations usable on this
// machine, best first: none without amd64 assembly (or with the noasm tag).
func accelerated() []*impl { return nil }

// unavailable names the accelerated implementations this build knows but
// this machine cannot run, with why (tests skip them visibly).
func unavailable() map[string]string {
	why := "this build has no assembly (the noasm tag, or not amd64)"
	return map[string]string{"avx512": why, "avx2": why}
}
