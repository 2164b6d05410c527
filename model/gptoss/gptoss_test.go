package gptoss

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"pagoda/gguf"
	"pagoda/model"
	"pagoda/model/nn"
	"pagoda/model/synth"
)

// TestLoad: a tiny synthetic gpt-oss (model/synth, as llama.cpp's
// converter writes it) loads with llama.cpp's hyperparameters: sliding
// window on the even layers (set_swa_pattern with pattern 2), the experts
// from expert_feed_forward_length, YaRN from rope.scaling.*.
func TestLoad(t *testing.T) {
	s, err := synth.ParseArchDims("gpt-oss", "128,64,4,4,2,300")
	if err != nil {
		t.Fatal(err)
	}
	s.SlidingWindow, s.ContextLen = 16, 512
	path := filepath.Join(t.TempDir(), "gpt-oss.gguf")
	if err := synth.Write(path, synth.Options{Shape: s, Type: gguf.Q8_0, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(f, nn.Options{Threads: 1})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config()
	if !slices.Equal(c.Windows, []int{16, 0, 16, 0}) {
		t.Errorf("windows %v, want [16 0 16 0]", c.Windows)
	}
	if c.Experts != 8 || c.ExpertsUsed != 4 || c.ExpertHiddenDim != 64 || c.HeadDim != 32 {
		t.Errorf("experts %d, used %d, of %d; head dim %d", c.Experts, c.ExpertsUsed, c.ExpertHiddenDim, c.HeadDim)
	}
	if r := c.Rope; r.Scaling != model.RopeScalingYaRN || r.Factor != 32 || r.OrigCtx != 4096 || !r.NeoX {
		t.Errorf("rope %+v, want NeoX YaRN ×32 from 4096", r)
	}
}

// TestRoute: gpt-oss's gating (llama.cpp's SOFTMAX_WEIGHT): the router
// bias added, the K largest logits chosen in order, their softmax over
// the K alone as weights.
func TestRoute(t *testing.T) {
	e := nn.MoE{Experts: make([]nn.FFN, 5), K: 2, Gating: nn.GatingTopKSoftmax}
	e.Router.Bias = []float32{0, 0, 0, 4, 0}
	logits := []float32{1, 3, 2, 0.5, -1}
	ids, w := make([]int32, 2), make([]float32, 2)
	e.Route(logits, ids, w, 1)
	if !slices.Equal(ids, []int32{3, 1}) {
		t.Fatalf("ids %v, want [3 1]", ids)
	}
	want0 := 1 / (1 + math.Exp(3-4.5))
	if math.Abs(float64(w[0])-want0) > 1e-6 || math.Abs(float64(w[0]+w[1])-1) > 1e-6 {
		t.Errorf("weights %v, want [%v %v]", w, want0, 1-want0)
	}
}

// TestDirectDraw: the MXFP4 experts drawn directly (synth.DrawDirect, as
// real shapes are) have the type and the spread of quantized normals
// (std 0.02), and the model loads.
func TestDirectDraw(t *testing.T) {
	s, err := synth.ParseArchDims("gpt-oss", "128,64,2,4,2,300")
	if err != nil {
		t.Fatal(err)
	}
	s.ContextLen = 512
	path := filepath.Join(t.TempDir(), "direct.gguf")
	if err := synth.Write(path, synth.Options{Shape: s, Type: gguf.Q8_0, Seed: 4, Draw: synth.DrawDirect}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, info, err := f.TensorData("blk.0.ffn_up_exps.weight")
	if err != nil || info.Type != gguf.MXFP4 {
		t.Fatalf("ffn_up_exps: %v, type %v", err, info.Type)
	}
	v := make([]float32, 128*64*8)
	if err := gguf.Dequantize(gguf.MXFP4, data, v); err != nil {
		t.Fatal(err)
	}
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if sd := math.Sqrt(ss / float64(len(v))); sd < 0.015 || sd > 0.025 {
		t.Errorf("expert weights' std %.4f, want about 0.02", sd)
	}
	m, err := New(f, nn.Options{Threads: 1})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	m.Close()
}
