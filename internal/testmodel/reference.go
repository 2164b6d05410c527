package testmodel

import (
	"encoding/json"
	"os"
	"testing"
)

// Reference is a llama.cpp greedy reference (testdata/reference, made by
// scripts/make_reference.py, and model/llama's flash-attention one): per
// prompt, its token ids and the greedy steps that follow.
type Reference struct {
	Cases []RefCase `json:"cases"`
}

// RefCase is one prompt of a Reference.
type RefCase struct {
	Prompt           string    `json:"prompt"`
	PromptTokens     []int32   `json:"prompt_tokens"`
	CompletionTokens []int32   `json:"completion_tokens"`
	Steps            []RefStep `json:"steps"`
}

// RefStep is one greedy step: the chosen id, its log-probability and the
// top-5 [id, logprob] pairs.
type RefStep struct {
	ID      int32        `json:"id"`
	Logprob float64      `json:"logprob"`
	Top     [][2]float64 `json:"top"`
}

// ReadReference reads the reference at path; it fails the test when the
// file is missing, malformed or has no cases.
func ReadReference(t testing.TB, path string) Reference {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	var r Reference
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("reference %s: %v", path, err)
	}
	if len(r.Cases) == 0 {
		t.Fatalf("reference %s has no cases", path)
	}
	return r
}
