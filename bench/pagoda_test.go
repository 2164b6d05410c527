package bench

import (
	"context"
	"net/http/httptest"
	_ "pagoda/model/archs" // registers every architecture
	"testing"

	"pagoda/engine"
	"pagoda/internal/testmodel"
	"pagoda/model"
	"pagoda/server"
)

// The benchmark against a real pagoda server (the tiny stories model):
// every request succeeds, usage is reported, and with ignore_eos each
// request generates exactly its output length, for both endpoints.
func TestAgainstPagoda(t *testing.T) {
	cfg := engine.DefaultConfig(testmodel.Stories(t))
	cfg.MaxModelLen, cfg.KVCacheType, cfg.Threads, cfg.MaxNumSeqs = 256, model.KVF32, 1, 4
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer e.Close()
	defer cancel()
	e.Start(ctx)
	s := server.New(server.Options{ChatTemplate: "{% for m in messages %}{{ m['content'] }}{% endfor %}"})
	if err := s.SetEngine(e); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	defer s.Shutdown(context.Background())
	name, err := FetchModel(ctx, nil, srv.URL, "")
	if err != nil || name != "stories260K" {
		t.Fatalf("FetchModel = %q, %v", name, err)
	}
	for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
		t.Run(endpoint, func(t *testing.T) {
			prompts, _ := RandomPrompts(12, 6, 6, 0.25, 0)
			c := &Client{BaseURL: srv.URL, Endpoint: endpoint, Model: name, IgnoreEOS: true}
			results, d := Run(ctx, Config{Client: c, MaxConcurrency: 4, RequestRate: 200}, prompts)
			r := Summarize(results, d, []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL}, []float64{99})
			if r.Completed != 12 || r.Failed != 0 || r.UsageReported != 12 {
				t.Fatalf("completed %d failed %d usage %d; errors %q", r.Completed, r.Failed, r.UsageReported, r.Errors)
			}
			for i, res := range results {
				if res.OutputTokens != prompts[i].OutputLen || res.PromptTokens < prompts[i].InputLen {
					t.Fatalf("request %d: %d prompt / %d output tokens for %+v", i, res.PromptTokens, res.OutputTokens, prompts[i])
				}
			}
			if r.Metrics[MetricTTFT].Mean <= 0 || r.Metrics[MetricE2EL].Mean < r.Metrics[MetricTTFT].Mean {
				t.Fatalf("metrics %+v", r.Metrics)
			}
		})
	}
}
