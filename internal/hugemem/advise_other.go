//go:build !linux

package hugemem

// advise does nothing where there is no MADV_HUGEPAGE.
func advise([]byte) {}
