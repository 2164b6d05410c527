package nn

import (
	"fmt"
	"time"

	"pagoda/kernels"
	"pagoda/model"
)

// shard is this process's part of a tensor-parallel model (Megatron's
// split, rank r of n): attention by heads, the feed-forward by hidden
// units. wq/wk/wv and gate/up are column-parallel (rank r keeps its rows
// of the output: its heads' queries, keys and values, its hidden units);
// wo and down are row-parallel (rank r keeps its input columns) and their
// partial outputs are summed over the ranks (Reducer.IAllReduce) before the
// residual add, so every rank holds the whole residual stream. Norms,
// embeddings and the output projection are replicated; only rank 0
// computes the logits (the whole lm_head: the simplest correct choice).
// With one rank (comm nil) the model is the unsplit one, bit for bit.
type shard struct {
	comm  model.Reducer // nil: one rank
	rank  int
	size  int
	times model.CommTimes // of the current forward pass
	// inflight counts the all-reduces started and not yet waited for;
	// progress does nothing without one.
	inflight int
}

// start begins summing x over the ranks (IAllReduce) and returns the
// request, nil with one rank (nothing to sum).
func (sh *shard) start(x []float32) (model.Request, error) {
	if sh.comm == nil {
		return nil, nil
	}
	t := time.Now()
	r, err := sh.comm.IAllReduce(x)
	sh.times.Comm += time.Since(t)
	sh.times.AllReduces++
	if err != nil {
		return nil, fmt.Errorf("tensor-parallel all-reduce: %w", err)
	}
	sh.inflight++
	return r, nil
}

// wait blocks until r completes (nothing for a nil request).
func (sh *shard) wait(r model.Request) error {
	if r == nil {
		return nil
	}
	t := time.Now()
	err := r.Wait()
	sh.times.Wait += time.Since(t)
	sh.inflight--
	if err != nil {
		return fmt.Errorf("tensor-parallel all-reduce: %w", err)
	}
	return nil
}

// progress drives the outstanding all-reduces (MPI advances a nonblocking
// collective only inside MPI calls): called between kernels and, through
// the pool (kernels.Pool.SetBetween), between the tasks of a kernel, from
// the goroutine running the forward pass, while a micro-batch's
// all-reduce is in flight. A failure is left for the wait to report.
func (sh *shard) progress() {
	if sh.comm == nil || sh.inflight == 0 {
		return
	}
	t := time.Now()
	sh.comm.Progress()
	sh.times.Comm += time.Since(t)
}

// logits reports whether this rank computes the logits.
func (sh *shard) logits() bool { return sh.rank == 0 }

// localConfig checks that c divides over n ranks and returns one rank's
// shape: Heads, KVHeads, HiddenDim and ExpertHiddenDim divided by n, the
// rest unchanged. With expert parallelism (ep) the experts stay whole
// (ExpertHiddenDim unchanged) and there must be an expert for each rank.
func localConfig(c model.Config, n int, ep bool) (model.Config, error) {
	if c.Heads%n != 0 || c.KVHeads%n != 0 {
		return c, fmt.Errorf("tensor parallelism over %d ranks needs the query heads (%d) and the KV heads (%d) to be divisible by %d",
			n, c.Heads, c.KVHeads, n)
	}
	if c.HiddenDim%n != 0 {
		return c, fmt.Errorf("tensor parallelism over %d ranks needs the feed-forward length (%d) to be divisible by %d", n, c.HiddenDim, n)
	}
	switch {
	case ep && c.Experts > 0 && c.Experts < n:
		return c, fmt.Errorf("expert parallelism over %d ranks needs at least %d experts, not %d", n, n, c.Experts)
	case !ep && c.ExpertHiddenDim%n != 0:
		return c, fmt.Errorf("tensor parallelism over %d ranks needs the expert feed-forward length (%d) to be divisible by %d", n, c.ExpertHiddenDim, n)
	}
	c.Heads, c.KVHeads, c.HiddenDim = c.Heads/n, c.KVHeads/n, c.HiddenDim/n
	if !ep {
		c.ExpertHiddenDim /= n
	}
	return c, nil
}

// ExpertRange returns the experts [lo, hi) rank r of n holds under expert
// parallelism: contiguous ranges (vLLM's default linear placement), the
// first experts%n ranks holding one more.
func ExpertRange(experts, r, n int) (lo, hi int) {
	base, extra := experts/n, experts%n
	lo = r*base + min(r, extra)
	hi = lo + base
	if r < extra {
		hi++
	}
	return lo, hi
}

// colsOf returns columns [r·C/n, (r+1)·C/n) of w as a new matrix. The
// split must fall on w's quantization blocks: C/n a multiple of the
// type's block size.
func colsOf(w kernels.Weight, r, n int) (kernels.Weight, error) {
	k := w.Cols / n
	if w.Cols%n != 0 || k%w.Type.BlockSize() != 0 {
		return w, fmt.Errorf("%s row-parallel split of %d columns over %d ranks gives %d columns, not a multiple of the %d-element quantization block",
			w.Type, w.Cols, n, k, w.Type.BlockSize())
	}
	rb := len(w.Data) / w.Rows
	kb, err := w.Type.RowSize(k)
	if err != nil {
		return w, err
	}
	data := make([]byte, 0, w.Rows*kb)
	for row := range w.Rows {
		src := w.Data[row*rb:]
		data = append(data, src[r*kb:(r+1)*kb]...)
	}
	out := kernels.Weight{Type: w.Type, Data: data, Rows: w.Rows, Cols: k}
	return out, out.Validate()
}

// ShardBytes is the size of this rank's weights in the file's formats
// (before any packing): its part of every layer's matrices and biases,
// the token embeddings, and the output projection when it is a tensor of
// its own and this rank computes the logits.
func (m *Model) ShardBytes() int64 { return m.shardBytes }

// weightBytes computes ShardBytes after the split.
func (m *Model) weightBytes() int64 {
	n := int64(len(m.embd.Data))
	if m.untied && m.tp.logits() {
		n += int64(len(m.output.Data))
	}
	for i := range m.layers {
		for _, l := range m.layers[i].linears() {
			n += int64(len(l.W.Data)) + 4*int64(len(l.Bias))
		}
	}
	return n
}
