package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"pagoda/dist"
	"pagoda/engine"
	"pagoda/sched"
	"pagoda/server"
)

// tensorParallel returns the communicator of an --tensor-parallel-size n
// run, nil for n ≤ 1 (the flag parser refuses n < 1): the MPI world started by `mpirun -np n`, which must
// have exactly n ranks (dist.Init refuses a binary built without MPI
// under a several-rank mpirun).
func tensorParallel(n int) (dist.Comm, error) {
	if n <= 1 {
		return nil, nil
	}
	if !dist.MPIAvailable {
		return nil, fmt.Errorf("--tensor-parallel-size %d needs the MPI build (make build-mpi: bin/pagoda-mpi) started by mpirun -np %d", n, n)
	}
	c, err := dist.Init(dist.Options{})
	if err != nil {
		return nil, err
	}
	if c.Size() != n {
		c.Close()
		return nil, fmt.Errorf("--tensor-parallel-size %d, but %d rank(s) were started: run under mpirun -np %d", n, c.Size(), n)
	}
	return c, nil
}

// joinTensorParallel joins the n ranks of a serve or generate run (none
// for n ≤ 1). Rank 0, or the only process, returns lead with its
// communicator in cfg.TensorParallel (nil with one rank) and release, which
// closes it once the run is over. Every other rank runs rank 0's steps
// (follow) until rank 0 shuts it down, then returns lead false and how
// that ended; so does a failed set-up, with its error.
func joinTensorParallel(n int, cfg *engine.Config) (lead bool, release func(), err error) {
	comm, err := tensorParallel(n)
	if err != nil {
		return false, nil, err
	}
	if comm == nil {
		return true, func() {}, nil
	}
	if comm.Rank() > 0 {
		defer comm.Close()
		return false, nil, follow(*cfg, comm)
	}
	cfg.TensorParallel = comm
	return true, func() { comm.Close() }, nil
}

// follow is a rank other than 0 of a serve or generate run: it executes
// rank 0's steps until rank 0 shuts it down. It ignores SIGTERM and
// SIGINT (mpirun forwards them to every rank): rank 0 handles them, drains
// its requests and then ends this rank with the shutdown message.
func follow(cfg engine.Config, comm dist.Comm) error {
	signal.Ignore(syscall.SIGTERM, os.Interrupt)
	return engine.Follow(cfg, comm)
}

// expertParallelHelp is --enable-expert-parallel's help.
const expertParallelHelp = "expert parallelism: with --tensor-parallel-size N, each rank holds 1/N of every layer's experts whole " +
	"(contiguous ranges) instead of a slice of each; no effect with one rank or a model without experts"

// registerDBO registers vLLM's dual-batch overlap flags on fs, into d
// (which starts as sched.DefaultDBO()).
func registerDBO(fs *flag.FlagSet, d *sched.DBO) {
	*d = sched.DefaultDBO()
	fs.BoolVar(&d.Enable, "enable-dbo", false, "dual-batch overlap: split big steps into two micro-batches and overlap one's tensor-parallel all-reduces with the other's compute")
	fs.IntVar(&d.DecodeTokenThreshold, "dbo-decode-token-threshold", d.DecodeTokenThreshold, "fewest tokens of a decode-only step that DBO splits")
	fs.IntVar(&d.PrefillTokenThreshold, "dbo-prefill-token-threshold", d.PrefillTokenThreshold, "fewest tokens of a step with a prompt chunk that DBO splits")
}

// tpShutdownGrace bounds the drain on SIGTERM under tensor parallelism:
// mpirun follows its SIGTERM with SIGKILL about a second later (Open MPI's
// odls_base_sigkill_timeout), so the requests in flight are answered (503,
// or an error event and [DONE]) at once rather than drained.
const tpShutdownGrace = 200 * time.Millisecond

// deadLinger is how long a server whose engine failed keeps answering
// (503 with the failure) before it exits, so that probes and clients see why.
const deadLinger = time.Second

// engineDead ends a serve whose engine failed (a tensor-parallel rank that
// stopped answering): the server answers /health and new requests with 503
// and the failure, the requests in flight get theirs, and serve returns an
// error so that the process exits non-zero and mpirun ends the job.
func engineDead(e *engine.Engine, srv *server.Server, logger *log.Logger) error {
	err := e.Failed()
	logger.Printf("ERROR %v: stopping", err)
	time.Sleep(deadLinger) // /health and new requests answer 503 with the failure meanwhile
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(ctx) // the handlers answer with the failure; new requests get 503
	return err
}
