// Package gguf reads and writes GGUF model files (versions 2 and 3) and
// converts tensor data between float32 and the ggml block formats.
//
// File layout (all integers little-endian):
//
//	+-------------------------------------------------------------+
//	| "GGUF" | version u32 | n_tensors u64 | n_kv u64              |
//	| n_kv × (key string, value type u32, value)                   |
//	| n_tensors × (name string, n_dims u32, dims u64…, type u32,   |
//	|              offset u64)                                      |
//	| padding to Alignment                                          |
//	+------------------------------ DataOffset --------------------+
//	| tensor data; each tensor at DataOffset+Offset, Offset a       |
//	| multiple of Alignment, Size = RowSize(Dims[0])·Π Dims[1:]     |
//	+-------------------------------------------------------------+
//
// Invariants of a File returned by Open or Parse:
//
//   - Every count, length and offset read from the file was checked against
//     the bytes that remain before anything was allocated for it, so a
//     malformed or truncated file yields an error naming the key or tensor at
//     fault (wrapping one of the Err* sentinels), never a panic and never an
//     allocation larger than the file size justifies.
//   - KV is in file order and keys are unique; Tensors is in file order and
//     names are unique.
//   - Every tensor has 1 to 4 positive dims whose product fits an int, a known
//     type, a row length (Dims[0]) that is a whole number of blocks, an Offset
//     aligned to Alignment, and data [DataOffset+Offset, +Size) that lies
//     inside the file and overlaps no other tensor's data.
//   - Alignment is a power of two (general.alignment, default 32).
//
// Open maps the file read-only; TensorData returns slices of that mapping,
// never copies, valid until Close. Metadata values are copied out of the
// mapping and stay valid after Close.
package gguf
