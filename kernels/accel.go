package kernels

// accelerated returns the CPU-specific implementations usable on this
// machine, best first. No accelerated implementation is built yet: the
// AVX2/AVX-512 ones will be listed here, chosen from CPU features.
func accelerated() []*impl { return nil }
