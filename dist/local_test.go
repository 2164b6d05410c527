package dist

import (
	"errors"
	"slices"
	"testing"
)

// One rank: the collectives are the identity and requests complete at once.
func TestLocal(t *testing.T) {
	var c Comm = NewLocal()
	if c.Rank() != 0 || c.Size() != 1 {
		t.Fatalf("rank %d of %d", c.Rank(), c.Size())
	}
	msg := []byte("step")
	if got, err := c.Broadcast(msg); err != nil || string(got) != "step" {
		t.Fatalf("broadcast: %q, %v", got, err)
	}
	x := []float32{1.5, -2, 3}
	if err := c.AllReduce(x); err != nil || !slices.Equal(x, []float32{1.5, -2, 3}) {
		t.Fatalf("all-reduce: %v, %v", x, err)
	}
	r, err := c.IAllReduce(x)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := r.Test(); !done || err != nil {
		t.Fatalf("test: %v, %v", done, err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(c.Progress(), c.Barrier(), c.Close()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if _, err := c.IAllReduce(x); !errors.Is(err, ErrClosed) {
		t.Fatalf("all-reduce after close: %v", err)
	}
	if _, err := c.Broadcast(msg); !errors.Is(err, ErrClosed) {
		t.Fatalf("broadcast after close: %v", err)
	}
}

func TestLaunchedSize(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{{"", 0}, {"1", 1}, {"4", 4}, {"x", 0}, {"-2", 0}, {"99999999999999999999", 0}} {
		if got := launchedSize(func(string) string { return c.env }); got != c.want {
			t.Errorf("OMPI_COMM_WORLD_SIZE=%q: %d, want %d", c.env, got, c.want)
		}
	}
}

func TestOptionsTimeout(t *testing.T) {
	if (Options{}).timeout() != DefaultTimeout || (Options{Timeout: -1}).timeout() >= 0 {
		t.Fatal("timeout defaults")
	}
}
