package kernels

// Attention sinks (Attention.Sinks): a learned logit per query head that
// joins the softmax's denominator and contributes no value, so that a head
// may attend to nothing (OpenAI's gpt-oss; Xiao et al., "Efficient
// Streaming Language Models with Attention Sinks"). llama.cpp adds them in
// ggml_soft_max_ext (ggml_soft_max_add_sinks; its unfused attention) and
// in ggml_flash_attn_ext (after the last position); the two functions here
// are those additions, called only when Sinks is not nil, so that plain
// attention keeps its arithmetic exactly.

// softmaxSink is softmaxExp over sc with query head h's sink: returns the
// factor the probabilities are multiplied by.
//
// bit-exact contract (ggml_compute_forward_soft_max_f32 with src2): the
// maximum is max(max(sc), sink); the exponentials and their float64 sum as
// softmaxExp; then sum += float64(expf(sink − max)); the factor is
// float32(1/sum). The tiled attention (fast arithmetic) uses the same.
func (j *attentionJob) softmaxSink(sc []float32, m float32, h int) float32 {
	sink := j.a.Sinks[h]
	if sink > m {
		m = sink
	}
	sum := j.k.softmaxExp(sc, m)
	sum += float64(expf(sink - m))
	return float32(1 / sum)
}

// flashSink finishes the flash recurrence (running maximum m, sum, the
// accumulator in ws) with the current head's sink and writes out.
//
// bit-exact contract (ggml_compute_forward_flash_attn_ext_f16_one_chunk):
// the accumulator is widened to float32 (from F16 when f16); with the sink
// s, if s > m: ms = expf(m − s) and the accumulator is multiplied by ms,
// vs = 1; else ms = 1, vs = expf(s − m); sum = fma(sum, ms, vs); out =
// acc·(1/sum), 0 when sum is 0.
func (j *attentionJob) flashSink(ws *workerScratch, out []float32, f16 bool, m, sum float32) {
	hd := len(out)
	if f16 {
		ws.acc = grow(ws.acc, hd)
		for d, v := range ws.acc16[:hd] {
			ws.acc[d] = f16Table[v]
		}
	}
	acc := ws.acc[:hd]
	s := j.a.Sinks[ws.head]
	ms, vs := float32(1), float32(1)
	if s > m {
		ms = expf(m - s)
		for d := range acc {
			acc[d] *= ms
		}
	} else {
		vs = expf(s - m)
	}
	sum = fma32(sum, ms, vs)
	var inv float32
	if sum != 0 {
		inv = 1 / sum
	}
	for d, v := range acc {
		out[d] = v * inv
	}
}
