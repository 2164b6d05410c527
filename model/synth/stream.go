package synth

import (
	"fmt"
	"hash/fnv"
	"io"
	"sync"

	"pagoda/gguf"
)

// planned is one tensor as it is written: its type, and whether its
// blocks are drawn directly.
type planned struct {
	tensor
	typ    gguf.Type
	direct bool
}

// chunkValues is the number of values of a directly drawn tensor that one
// job draws, each chunk from its own generator (seeded by the model seed,
// the tensor name and the chunk index), so that the bytes do not depend on
// the number of workers. A multiple of every block size.
const chunkValues = 1 << 20

// A job makes one piece of one tensor's data: a chunk of a directly drawn
// tensor, or a whole tensor quantized from its float source.
type job struct {
	tensor, chunk int
	out           chan result
}

type result struct {
	data []byte
	err  error
}

// pipeline makes the tensors' data on workers, in file order, at most
// window jobs ahead of the consumer (Write streams it, Build keeps it).
type pipeline struct {
	ts     []planned
	seed   uint64
	jobs   []job
	first  []int // first[i]: tensor i's first job
	window chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
}

func chunks(p planned) int {
	if !p.direct {
		return 1
	}
	return (p.elements() + chunkValues - 1) / chunkValues
}

// startPipeline starts workers goroutines making ts's data.
func startPipeline(ts []planned, seed uint64, workers int) *pipeline {
	p := &pipeline{ts: ts, seed: seed, first: make([]int, len(ts)+1),
		window: make(chan struct{}, 2*workers+2), stop: make(chan struct{})}
	for i, t := range ts {
		p.first[i] = len(p.jobs)
		for c := range chunks(t) {
			p.jobs = append(p.jobs, job{tensor: i, chunk: c, out: make(chan result, 1)})
		}
	}
	p.first[len(ts)] = len(p.jobs)
	todo := make(chan job)
	go func() { // hand out the jobs in order, window ahead of the consumer
		defer close(todo)
		for _, j := range p.jobs {
			select {
			case p.window <- struct{}{}:
			case <-p.stop:
				return
			}
			select {
			case todo <- j:
			case <-p.stop:
				return
			}
		}
	}()
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for j := range todo {
				data, err := p.produce(j)
				j.out <- result{data, err}
			}
		}()
	}
	return p
}

// produce makes one job's data.
func (p *pipeline) produce(j job) ([]byte, error) {
	t := p.ts[j.tensor]
	if !t.direct {
		return gguf.Quantize(t.typ, source(t.tensor, p.seed))
	}
	n := min(chunkValues, t.elements()-j.chunk*chunkValues)
	size, err := t.typ.RowSize(n)
	if err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte(t.name))
	data := make([]byte, size)
	return data, fillDirect(t.typ, t.std, newRNG(p.seed, h.Sum64(), uint64(j.chunk)), data)
}

// write writes tensor i's data to dst as its jobs finish.
func (p *pipeline) write(i int, dst io.Writer) error {
	for _, j := range p.jobs[p.first[i]:p.first[i+1]] {
		r := <-j.out
		<-p.window
		if r.err != nil {
			return fmt.Errorf("synth: tensor %s: %w", p.ts[i].name, r.err)
		}
		if _, err := dst.Write(r.data); err != nil {
			return err
		}
	}
	return nil
}

// close stops the pipeline (whether or not every job was consumed) and
// waits for its workers.
func (p *pipeline) close() {
	close(p.stop)
	p.wg.Wait()
}
