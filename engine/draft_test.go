package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"pagoda/gguf"
	"pagoda/internal/testmodel"
	"pagoda/model/synth"
	"pagoda/sched"
)

// writeSynthDraft synthesizes a small llama-family draft model with the
// vocabulary (tokenizer metadata and token count) of the GGUF at vocabPath:
// random weights, so its proposals are mostly wrong — a draft that tests
// correctness, not speed. No registry package ships a real small model
// with the vocabulary of pagoda's default model.
func writeSynthDraft(t *testing.T, vocabPath, dims string) string {
	t.Helper()
	shape, err := synth.ParseArchDims("llama", dims)
	if err != nil {
		t.Fatal(err)
	}
	v, err := gguf.Open(vocabPath)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	path := filepath.Join(t.TempDir(), "draft.gguf")
	if err := synth.Write(path, synth.Options{Shape: shape, Type: gguf.Q8_0, Seed: 7, Vocab: v}); err != nil {
		t.Fatal(err)
	}
	return path
}

// draftSpec configures the draft model at path with k proposals.
func draftSpec(path string, k int) func(*Config) {
	return func(c *Config) {
		c.Speculative = &SpeculativeConfig{Method: "draft_model", Model: path, NumSpeculativeTokens: k, DisableByBatchSize: 64}
	}
}

// checkDraft fails if the draft model failed a forward pass or holds
// state with no request left, and returns its proposer.
func checkDraft(t *testing.T, e *Engine) *draftProposer {
	t.Helper()
	d := e.spec.(*draftProposer)
	if d.err != nil {
		t.Fatalf("draft forward: %v", d.err)
	}
	if err := d.blocks.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if !e.HasUnfinished() {
		if n, free := d.blocks.NumSequences(), d.blocks.NumFreeBlocks(); n != 0 || len(d.seqs) != 0 || free != d.blocks.Device().NumBlocks() {
			t.Fatalf("draft state left: %d sequences, %d states, %d of %d blocks free", n, len(d.seqs), free, d.blocks.Device().NumBlocks())
		}
	}
	return d
}

func acceptance(sp SpecStats) float64 {
	if sp.DraftTokens == 0 {
		return 0
	}
	return float64(sp.Accepted) / float64(sp.DraftTokens)
}

// TestDraftModelIdentity: with a draft model (stories260K as its own
// draft, and a synthetic draft with its vocabulary), the workload run
// alone and all at once — roomy, in a small pool (chunked prefill, prefix
// hits, preemption by recompute and by swap, the draft's own cache as
// small, so its states are dropped and rebuilt) and with a small token
// budget (proposals that wait a step, chunked catch-ups) — gives exactly
// the tokens, text and logprobs of plain decoding.
func TestDraftModelIdentity(t *testing.T) {
	path := testmodel.Stories(t)
	base := newTestEngine(t, path, nil)
	reqs := specWorkload(base, 10)
	want := runAll(t, base, reqs)
	tight := func(c *Config) {
		c.BlockSize, c.NumBlocksOverride, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 60, 32, 8, 128
	}
	drafts := map[string]string{"self": path, "synth": writeSynthDraft(t, path, "64,128,2,4,2,512")}
	for _, name := range []string{"self", "synth"} {
		spec := draftSpec(drafts[name], 5)
		// small_budget: most decoding sequences wait for the budget (their
		// proposals serve again), the draft's catch-ups are chunked.
		cases := append(specCases(spec, tight), specCase{"small_budget",
			func(c *Config) { spec(c); c.MaxNumBatchedTokens, c.MaxNumSeqs, c.BlockSize = 8, 8, 4 }, false})
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				e := tc.run(t, path, reqs, want)
				d := checkDraft(t, e)
				st := e.Stats()
				if st.Spec.Drafts == 0 {
					t.Fatalf("nothing proposed: %+v", st.Spec)
				}
				if name == "self" && acceptance(st.Spec) < 0.5 {
					t.Fatalf("the target as its own draft: %d of %d proposals accepted", st.Spec.Accepted, st.Spec.DraftTokens)
				}
				if tc.name == "tight_recompute" && st.Preemptions == 0 || tc.name == "tight_swap" && st.SwapOuts == 0 {
					t.Fatalf("the small pool did not preempt: %+v", st)
				}
				if strings.HasPrefix(tc.name, "tight") && d.dropped == 0 {
					t.Fatalf("no draft state dropped in the small pool")
				}
				if tc.name == "small_budget" && d.reused == 0 {
					t.Fatalf("no proposal served again")
				}
				if d.rebuilt != 0 {
					t.Fatalf("%d draft states were no prefix of their sequence", d.rebuilt)
				}
				t.Logf("%d drafts, %d of %d proposed tokens accepted (%.0f%%), per position %v; %d steps; draft: %d forwards, %d tokens, %d blocks, %d states dropped, %d proposals reused",
					st.Spec.Drafts, st.Spec.Accepted, st.Spec.DraftTokens, 100*acceptance(st.Spec), st.Spec.AcceptedPerPos, st.Steps,
					d.forwards, d.forwardTokens, d.sizing.NumBlocks, d.dropped, d.reused)
			})
		}
	}
}

// TestDraftModelGreedySelf: the target as its own draft proposes exactly
// the greedy continuation, so greedy requests accept every proposal that
// does not lie past the end of the sequence, in fewer steps.
func TestDraftModelGreedySelf(t *testing.T) {
	path := testmodel.Stories(t)
	base := newTestEngine(t, path, nil)
	reqs := specWorkload(base, 6)
	for i := range reqs {
		p := GreedyParams(20 + 7*i)
		p.ReturnLogprobs, p.Logprobs = true, 1
		reqs[i].Params = p
	}
	want := runAll(t, base, reqs)
	e := newTestEngine(t, path, draftSpec(path, 4))
	sameOutputs(t, runAll(t, e, reqs), want)
	checkDraft(t, e)
	st := e.Stats()
	if acceptance(st.Spec) < 0.95 || st.Steps >= base.Stats().Steps {
		t.Fatalf("%+v; %d steps, %d without speculation", st.Spec, st.Steps, base.Stats().Steps)
	}
	t.Logf("%+v (%.1f%% accepted); %d steps, %d without speculation", st.Spec, 100*acceptance(st.Spec), st.Steps, base.Stats().Steps)
}

// TestDraftModelSmolLM2: on the default model, in the fast arithmetic
// `pagoda serve` runs, chat requests (greedy and seeded, alone and
// together) give plain decoding's tokens and logprobs with the default
// model as its own draft (nearly every proposal of a greedy request
// accepted) and with a synthetic draft of its vocabulary (nearly none).
func TestDraftModelSmolLM2(t *testing.T) {
	heavy(t)
	path := testmodel.Default(t)
	fast := fastArithmetic
	base := newTestEngine(t, path, fast)
	reqs := smolChatRequests(base, 32, func(i int) bool { return i == 1 },
		"Repeat this sentence exactly: The quick brown fox jumps over the lazy dog near the river bank.",
		"Write the list again in the same order: apples, pears, plums, cherries, grapes, melons.",
		"Say hello.")
	want := runAll(t, base, reqs)
	drafts := map[string]string{"self": path, "synth": writeSynthDraft(t, path, "64,128,2,4,2,1000")}
	for _, name := range []string{"self", "synth"} {
		t.Run(name, func(t *testing.T) {
			e := newTestEngine(t, path, func(c *Config) { fast(c); draftSpec(drafts[name], 4)(c) })
			var greedy SpecStats // of the greedy requests run alone
			var got []RequestOutput
			for _, r := range reqs {
				before := e.Stats().Spec
				got = append(got, runAll(t, e, []Request{r})[0])
				if r.Params.Temperature == 0 {
					after := e.Stats().Spec
					greedy.Drafts += after.Drafts - before.Drafts
					greedy.DraftTokens += after.DraftTokens - before.DraftTokens
					greedy.Accepted += after.Accepted - before.Accepted
				}
			}
			sameOutputs(t, got, want)
			alone := e.Stats().Spec
			sameOutputs(t, runAll(t, e, reqs), want)
			checkDraft(t, e)
			sp := e.Stats().Spec
			if sp.Drafts == 0 || name == "self" && acceptance(greedy) < 0.9 {
				t.Fatalf("%+v; alone %+v, greedy %+v", sp, alone, greedy)
			}
			t.Logf("greedy alone %d of %d accepted (%.1f%%); all alone %+v (%.1f%%); in all %+v (%.1f%%)", greedy.Accepted, greedy.DraftTokens,
				100*acceptance(greedy), alone, 100*acceptance(alone), sp, 100*acceptance(sp))
		})
	}
	t.Run("self_tight_recompute", func(t *testing.T) {
		e := newTestEngine(t, path, func(c *Config) {
			fast(c)
			draftSpec(path, 4)(c)
			c.BlockSize, c.NumBlocksOverride, c.MaxNumBatchedTokens, c.MaxNumSeqs, c.MaxModelLen = 4, 20, 32, 8, 68
			c.Preemption = sched.PreemptRecompute
		})
		sameOutputs(t, runAll(t, e, reqs), want)
		d := checkDraft(t, e)
		st := e.Stats()
		if st.Preemptions == 0 || st.Spec.Accepted == 0 {
			t.Fatalf("%d preemptions, %+v", st.Preemptions, st.Spec)
		}
		t.Logf("%d preemptions, %d draft states dropped; %+v (%.1f%%)", st.Preemptions, d.dropped, st.Spec, 100*acceptance(st.Spec))
	})
}

// TestDraftModelRefused: a draft whose vocabulary differs from the
// target's is refused at start-up, naming the difference.
func TestDraftModelRefused(t *testing.T) {
	path := testmodel.Stories(t)
	bigger := writeSynthDraft(t, path, "64,128,1,4,2,600") // the stories tokens, padded to 600
	for _, tc := range []struct{ draft, want string }{
		{bigger, "vocabulary has 600 tokens, the target's 512"},
		{filepath.Join(t.TempDir(), "missing.gguf"), "draft model"},
	} {
		cfg := DefaultConfig(path)
		cfg.MaxModelLen, cfg.Threads = 128, 2
		draftSpec(tc.draft, 3)(&cfg)
		e, err := New(cfg)
		if err == nil {
			e.Close()
			t.Fatalf("%s: accepted", tc.draft)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want an error naming %q", tc.draft, err, tc.want)
		}
	}
}

// TestDraftVocabulary: the vocabulary check compares the token count and
// every token's text.
func TestDraftVocabulary(t *testing.T) {
	file := func(tokens ...string) *gguf.File {
		w := gguf.NewWriter()
		w.AddKV("tokenizer.ggml.tokens", tokens)
		f, err := w.File()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	target := file("a", "b", "c")
	for _, tc := range []struct {
		f     *gguf.File
		vocab int
		want  string
	}{
		{file("a", "b", "c"), 3, ""},
		{file("a", "b", "c"), 4, "vocabulary has 4 tokens, the target's 3"},
		{file("a", "b", "c", "d"), 3, "tokenizer has 4 tokens, the target's 3"},
		{file("a", "x", "c"), 3, `token 1 is "x" in the draft, "b" in the target`},
		{file(), 3, "tokenizer has 0 tokens"},
	} {
		err := sameVocabulary(tc.vocab, tc.f, 3, target)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}
