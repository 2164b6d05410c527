package hugemem

import "syscall"

// advise asks for huge pages over b, which starts on a huge page; an
// error (an old kernel, transparent huge pages disabled) leaves ordinary
// pages, which only cost speed.
func advise(b []byte) {
	if n := len(b) &^ (PageSize - 1); n > 0 {
		_ = syscall.Madvise(b[:n], syscall.MADV_HUGEPAGE)
	}
}
