package nn

import "pagoda/gguf"

// expertBiases loads the optional expert biases of layer prefix p into e's
// experts (gpt-oss; llama.cpp's ffn_gate_exps.bias, ffn_up_exps.bias,
// [n_ff_exp, n_expert], and ffn_down_exps.bias, [n_embd, n_expert]): row i
// of each is expert i's bias, a view of the converted tensor.
func (b *Builder) expertBiases(p string, e *MoE) {
	c := b.Cfg
	for _, t := range []struct {
		name string
		rows int
		set  func(f *FFN) *[]float32
	}{
		{"ffn_gate_exps", c.ExpertHiddenDim, func(f *FFN) *[]float32 { return &f.Gate.Bias }},
		{"ffn_up_exps", c.ExpertHiddenDim, func(f *FFN) *[]float32 { return &f.Up.Bias }},
		{"ffn_down_exps", c.Dim, func(f *FFN) *[]float32 { return &f.Down.Bias }},
	} {
		name := p + "." + t.name + ".bias"
		if !b.Has(name) {
			continue
		}
		all := b.Matrix2D(name, len(e.Experts), t.rows)
		if all == nil {
			return
		}
		for i := range e.Experts {
			*t.set(&e.Experts[i]) = all[i*t.rows : (i+1)*t.rows : (i+1)*t.rows]
		}
	}
}

// Matrix2D returns the 2-D tensor name (GGUF dims [cols, rows]) converted
// to float32, rows × cols row-major; nil after recording an error.
func (b *Builder) Matrix2D(name string, rows, cols int) []float32 {
	data, info, err := b.F.TensorData(name)
	if err != nil {
		b.Fail(name, "%v", err)
		return nil
	}
	if len(info.Dims) != 2 || info.Dims[0] != cols || info.Dims[1] != rows {
		b.Fail(name, "shape %v, want [%d %d]", info.Dims, cols, rows)
		return nil
	}
	v := make([]float32, rows*cols)
	if err := gguf.Dequantize(info.Type, data, v); err != nil {
		b.Fail(name, "%v", err)
		return nil
	}
	return v
}
