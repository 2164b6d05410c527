//go:build !mpi

package dist

import (
	"errors"
	"testing"
)

// Without MPI support, a process started by mpirun with several ranks
// refuses to run as if alone; with one rank or none it is Local.
func TestInitWithoutMPI(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	if _, err := Init(Options{}); !errors.Is(err, ErrNoMPI) {
		t.Fatalf("two ranks without MPI: %v", err)
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "1")
	c, err := Init(Options{})
	if err != nil || c.Size() != 1 {
		t.Fatalf("one rank: %v", err)
	}
	if MPIAvailable {
		t.Fatal("MPIAvailable in a build without the mpi tag")
	}
}
