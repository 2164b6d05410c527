package main

import (
	"fmt"

	"pagoda/dist"
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
