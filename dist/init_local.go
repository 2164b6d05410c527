//go:build !mpi

package dist

import "os"

// MPIAvailable reports whether this binary was built with MPI support.
const MPIAvailable = false

// Init returns the Comm of this process: Local, since this binary has no
// MPI support; ErrNoMPI when mpirun started it with several ranks (each
// would otherwise believe it is alone).
func Init(opts Options) (Comm, error) {
	if launchedSize(os.Getenv) > 1 {
		return nil, ErrNoMPI
	}
	return NewLocal(), nil
}
