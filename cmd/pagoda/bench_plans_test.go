package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"pagoda/internal/testmodel"
)

func TestBenchPlansFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--modes", "exponential,quadratic"},
		{"--num-prompts", "0"},
	} {
		var out, errOut bytes.Buffer
		err := runBench(append([]string{"plans"}, args...), &out, &errOut)
		var u usageError
		if !errors.As(err, &u) {
			t.Fatalf("bench plans %v: %v, want a usage error", args, err)
		}
	}
}

// A tiny run prints one row per mode, with plans only where they are on.
func TestBenchPlansRun(t *testing.T) {
	path := testmodel.Default(t)
	var out, errOut bytes.Buffer
	err := runBench([]string{"plans", "--model", path, "--modes", "exponential,eager", "--num-prompts", "2",
		"--input-len", "8", "--output-len", "2", "--max-num-seqs", "2", "--max-model-len", "256"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v (%s)", err, errOut.String())
	}
	var rows []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "exponential ") || strings.HasPrefix(l, "eager ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 2 || strings.Fields(rows[1])[1] != "0" || strings.Fields(rows[0])[1] == "0" {
		t.Fatalf("rows %q in\n%s", rows, out.String())
	}
}
