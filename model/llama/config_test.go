package llama

import (
	"math"
	"slices"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/model"
	"pagoda/model/nn"
)

func TestRegistered(t *testing.T) {
	for _, arch := range []string{"llama", "mistral", "qwen2"} {
		if !slices.Contains(model.Architectures(), arch) {
			t.Errorf("architecture %q is not registered", arch)
		}
	}
}

// TestLoadErrorsNameTheCulprit: malformed files fail to load with an
// error naming the key or tensor at fault.
func TestLoadErrorsNameTheCulprit(t *testing.T) {
	cases := []struct {
		name string
		spec func(*tinySpec)
		want string
	}{
		{"missing block count", func(s *tinySpec) { s.dropKey = "block_count" }, "qwen2.block_count"},
		{"missing tensor", func(s *tinySpec) { s.skip = "blk.1.ffn_up.weight" }, "blk.1.ffn_up.weight"},
		{"bad shape", func(s *tinySpec) { s.badShape = "blk.0.attn_k.weight" }, "blk.0.attn_k.weight"},
		{"bad bias shape", func(s *tinySpec) { s.badShape = "blk.0.attn_q.bias" }, "blk.0.attn_q.bias"},
		{"unknown arch", func(s *tinySpec) { s.arch = "gpt2" }, "gpt2"},
		{"heads not multiple of kv heads", func(s *tinySpec) { s.kvh = 3 }, "KV heads"},
		{"unsupported scaling", func(s *tinySpec) { s.extraKV = map[string]any{"rope.scaling.type": "longrope"} }, "longrope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := defaultTiny()
			c.spec(&spec)
			m, err := New(spec.build(t), Options{Threads: 1})
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %q", err, c.want)
			}
		})
	}
}

// TestRopeScalingConfig reads each scaling scheme and checks the kernel
// configuration it turns into.
func TestRopeScalingConfig(t *testing.T) {
	cases := []struct {
		name       string
		kv         map[string]any
		scaling    model.RopeScaling
		freqScale  float32
		extFactor  float32
		hasFactors bool
	}{
		{"none", nil, model.RopeScalingNone, 1, 0, false},
		{"linear by factor only", map[string]any{"rope.scaling.factor": float32(2)}, model.RopeScalingLinear, 0.5, 0, false},
		{"yarn", map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(4),
			"rope.scaling.original_context_length": uint32(32)}, model.RopeScalingYaRN, 0.25, 1, false},
		{"llama3", map[string]any{"rope.scaling.type": "llama3", "rope.scaling.factor": float32(8),
			"rope.scaling.original_context_length": uint32(32)}, model.RopeScalingLlama3, 1, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := defaultTiny()
			spec.extraKV = c.kv
			f := spec.build(t)
			cfg, err := readConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Rope.Scaling != c.scaling {
				t.Fatalf("scaling %q, want %q", cfg.Rope.Scaling, c.scaling)
			}
			rc := nn.RopeConfig(cfg.Rope, nil)
			if rc.FreqScale != c.freqScale || rc.ExtFactor != c.extFactor || (rc.FreqFactors != nil) != c.hasFactors {
				t.Fatalf("kernel config %+v", rc)
			}
			m, err := New(f, Options{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			m.Close()
		})
	}
}

// TestLlama3Factors checks the three regions of Llama 3.1's frequency
// scaling: unscaled high frequencies, fully scaled low ones, a blend in
// between that is monotone.
func TestLlama3Factors(t *testing.T) {
	r := model.Rope{Dim: 128, FreqBase: 500000, Factor: 8, OrigCtx: 8192, LowFreqFactor: 1, HighFreqFactor: 4}
	ff := nn.Llama3Factors(r)
	if ff[0] != 1 || ff[len(ff)-1] != 8 {
		t.Fatalf("factors start %v end %v, want 1 and 8", ff[0], ff[len(ff)-1])
	}
	for i := 1; i < len(ff); i++ {
		if ff[i] < ff[i-1] {
			t.Fatalf("factor %d = %v decreases from %v", i, ff[i], ff[i-1])
		}
	}
	for i, f := range ff {
		freq := math.Pow(500000, -2*float64(i)/128)
		wl := 2 * math.Pi / freq
		if wl > 8192/1.0 && f != 8 || wl < 8192/4.0 && f != 1 {
			t.Fatalf("factor %d = %v for wavelength %v", i, f, wl)
		}
	}
}

// TestRopeFreqsTensor: a rope_freqs.weight tensor is read and must have
// Dim/2 entries.
func TestRopeFreqsTensor(t *testing.T) {
	for _, n := range []int{8, 7} {
		spec := defaultTiny()
		f := spec.build(t)
		w := gguf.NewWriter()
		for _, kv := range f.KV {
			w.AddKV(kv.Key, kv.Value)
		}
		for _, ti := range f.Tensors {
			data, info, err := f.TensorData(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddTensor(ti.Name, info.Type, info.Dims, data); err != nil {
				t.Fatal(err)
			}
		}
		ones := make([]float32, n)
		for i := range ones {
			ones[i] = 1 + float32(i)
		}
		data, _ := gguf.Quantize(gguf.F32, ones)
		if err := w.AddTensor("rope_freqs.weight", gguf.F32, []int{n}, data); err != nil {
			t.Fatal(err)
		}
		g, err := w.File()
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(g, Options{Threads: 1})
		if n == 8 && err != nil {
			t.Fatalf("rope_freqs of 8: %v", err)
		}
		if n == 7 && (err == nil || !strings.Contains(err.Error(), "rope_freqs.weight")) {
			t.Fatalf("rope_freqs of 7: %v", err)
		}
		if m != nil {
			m.Close()
		}
	}
}
