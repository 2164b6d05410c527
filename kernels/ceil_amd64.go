//go:build amd64 && !noasm

package kernels

// The probes use the AVX-512 kernels when the CPU has them, else the AVX2
// ones, else the portable Go loops.

func readProbe(b []byte) uint64 {
	if hasAVX512() && len(b) >= 512 {
		return readBWAVX512(&b[0], len(b)&^511)
	}
	if hasAVX2() && len(b) >= 512 {
		return readBWAVX2(&b[0], len(b)&^511)
	}
	return readGo(b)
}

func fmaProbe(iters int) uint32 { return peakProbe(iters, peakFMAAVX512, peakFMAAVX2, fmaGo) }

func dotProbe(iters int) uint32 { return peakProbe(iters, peakDotAVX512, peakDotAVX2, dotGo) }

// peakProbe runs iters iterations of a peak probe in the widest ISA the
// CPU has.
func peakProbe(iters int, avx512, avx2, portable func(int) uint32) uint32 {
	if hasAVX512() && iters > 0 {
		return avx512(iters)
	}
	if hasAVX2() && iters > 0 {
		return avx2(iters)
	}
	return portable(iters)
}
