package synth

import (
	"pagoda/gguf"
)

// WriteReference writes to path the small synthetic model of a family that
// the reference files in testdata/reference were made from: `pagoda model
// synth --arch FAMILY --dims DIMS [--window W] --type Q8_0`, seed 1, with
// v's tokenizer (window < 0 keeps the family's). The tests check its sha256
// against the reference's model.
func WriteReference(path, family, dims string, window int, v *gguf.File) error {
	shape, err := ParseArchDims(family, dims)
	if err != nil {
		return err
	}
	if window >= 0 {
		shape.SlidingWindow = window
	}
	return Write(path, Options{Shape: shape, Type: gguf.Q8_0, Seed: 1, Vocab: v})
}
