// Package archs registers every architecture pagoda loads with
// model.Register; import it for its side effect. It is the one place a new
// family is added (docs/adding-a-model.md).
//
//	llama, mistral, qwen2   model/llama  (Llama 1–3.x, SmolLM, Mistral, Qwen2)
//	qwen3                   model/qwen3
//	qwen3moe                model/qwen3moe (blk.N.ffn_gate_inp, ffn_{gate,up,down}_exps;
//	                        expert_count, expert_used_count, expert_feed_forward_length)
//	gemma3                  model/gemma3
//	phi3                    model/phi3   (Phi-3, Phi-3.5, Phi-4-mini)
//	bert                    model/bert   (BERT, BGE, MiniLM: embeddings only)
//	gpt-oss                 model/gptoss (blk.N.attn_sinks, attn_{q,k,v,output}.bias,
//	                        post_attention_norm, ffn_gate_inp.bias, ffn_{gate,up,down}_exps
//	                        with .bias, MXFP4; attention.sliding_window, expert_*)
package archs

import (
	_ "pagoda/model/bert"
	_ "pagoda/model/gemma3"
	_ "pagoda/model/gptoss"
	_ "pagoda/model/llama"
	_ "pagoda/model/phi3"
	_ "pagoda/model/qwen3"
	_ "pagoda/model/qwen3moe"
)
