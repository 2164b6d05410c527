package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// completionScript writes `pagoda completion SHELL` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	code, out, stderr := runCLI("completion", shell)
	if code != 0 || stderr != "" {
		t.Fatalf("completion %s: exit %d: %s", shell, code, stderr)
	}
	p := filepath.Join(t.TempDir(), "pagoda."+shell)
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The bash script completes commands, subcommands, each command's flags,
// a few flags' values, --help=GROUP and models, run by bash itself with
// the words as bash splits them (at "=" too).
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := completionScript(t, "bash")
	for _, tc := range []struct {
		words      []string
		want, not  []string
		wantExactN int // number of candidates, 0: not checked
	}{
		{words: []string{""}, want: []string{"serve", "generate", "pull", "bench", "completion"}},
		{words: []string{"se"}, want: []string{"serve"}, wantExactN: 1},
		{words: []string{"serve", "--max-num"}, want: []string{"--max-num-seqs", "--max-num-batched-tokens",
			"--max-num-partial-prefills"}, not: []string{"--port"}},
		{words: []string{"serve", "smollm2", "--enable-p"}, want: []string{"--enable-prefix-caching"}, wantExactN: 1},
		{words: []string{"serve", "--kv-cache-dtype", ""}, want: []string{"auto", "f16", "f32", "bf16", "q8_0"}, wantExactN: 5},
		{words: []string{"serve", "--kv-cache-dtype", "=", "b"}, want: []string{"bf16"}, wantExactN: 1},
		{words: []string{"serve", "--port", "8000", "--log-level", "w"}, want: []string{"warning"}, wantExactN: 1},
		{words: []string{"serve", "--help", "=", "ca"}, want: []string{"cache"}, wantExactN: 1},
		{words: []string{"serve", "gem"}, want: []string{"gemma3"}},
		{words: []string{"bench", "th"}, want: []string{"throughput"}, wantExactN: 1},
		{words: []string{"bench", "throughput", "--num-p"}, want: []string{"--num-prompts"}, wantExactN: 1},
		{words: []string{"model", "info", "--t"}, want: []string{"--tensors"}, wantExactN: 1},
		{words: []string{"generate", "--model", "smo"}, want: []string{"smollm2"}},
		{words: []string{"completion", "--h"}, want: []string{"--help"}},
	} {
		words := append([]string{"pagoda"}, tc.words...)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := "source " + script + "\ncd " + t.TempDir() + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
			"COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_pagoda\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.words, err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("%q: candidates %q lack %q", tc.words, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("%q: candidates %q have %q", tc.words, got, w)
			}
		}
		if tc.wantExactN > 0 && len(got) != tc.wantExactN {
			t.Errorf("%q: candidates %q, want %d", tc.words, got, tc.wantExactN)
		}
	}
}

// The zsh and fish scripts name every command and parse in their shells
// (checked when the shell is installed).
func TestCompletionZshFish(t *testing.T) {
	for _, tc := range []struct{ shell, check string }{{"zsh", "-n"}, {"fish", "--no-execute"}} {
		script := completionScript(t, tc.shell)
		b, _ := os.ReadFile(script)
		for _, want := range []string{"serve", "throughput", "--max-num-seqs", "kv-cache-dtype", "smollm2"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s script lacks %q", tc.shell, want)
			}
		}
		sh, err := exec.LookPath(tc.shell)
		if err != nil {
			t.Logf("no %s: syntax not checked", tc.shell)
			continue
		}
		if out, err := exec.Command(sh, tc.check, script).CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v\n%s", tc.shell, tc.check, err, out)
		}
	}
	if code, _, stderr := runCLI("completion", "tcsh"); code != 2 || !strings.Contains(stderr, `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: exit %d, %s", code, stderr)
	}
}
