package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"pagoda/dist"
	"pagoda/engine"
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

// follow is a rank other than 0 of a serve or generate run: it executes
// rank 0's steps until rank 0 shuts it down. It ignores SIGTERM and
// SIGINT (mpirun forwards them to every rank): rank 0 handles them, drains
// its requests and then ends this rank with the shutdown message.
func follow(cfg engine.Config, comm dist.Comm) error {
	signal.Ignore(syscall.SIGTERM, os.Interrupt)
	return engine.Follow(cfg, comm)
}
