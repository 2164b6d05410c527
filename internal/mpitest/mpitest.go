// Package mpitest runs a test binary's helper process on several MPI ranks,
// for the tests built with the mpi tag (package dist, the tensor-parallel
// engine and server): the test re-runs its own binary under
// `mpirun -np N` with an environment variable naming a scenario, and a
// helper test (which returns at once without that variable) is each rank's
// body — the os/exec helper-process pattern.
package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Command returns the mpirun command that runs helper (a test name) of this
// test binary on np ranks with env=scenario, plus extra mpirun flags.
// mpirun missing fails the test, naming the make target that installs it.
func Command(ctx context.Context, t testing.TB, np int, helper, env, scenario string, extra ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Fatalf("mpirun not found (%v): install Open MPI with `make mpi-deps` (part of `make deps`; Debian packages libopenmpi-dev and openmpi-bin)", err)
	}
	args := []string{"-np", fmt.Sprint(np), "--oversubscribe"}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(append(args, extra...), "-x", env, os.Args[0], "-test.run", "^"+helper+"$", "-test.v", "-test.count=1")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env+"="+scenario)
	return cmd
}

// Run runs Command to its end within limit and returns mpirun's combined
// output and error; a run past limit fails the test (a rank hangs).
func Run(t testing.TB, np int, helper, env, scenario string, limit time.Duration, extra ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := Command(ctx, t, np, helper, env, scenario, extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: mpirun still running after %v (a rank hangs):\n%s", scenario, limit, out.String())
	}
	return out.String(), err
}
