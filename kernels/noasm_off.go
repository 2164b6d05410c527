//go:build !noasm

package kernels

// noasm is set by the noasm build tag: only the generic reference is used.
const noasm = false
