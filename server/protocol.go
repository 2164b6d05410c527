package server

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The request and response shapes of OpenAI's API, with vLLM's extra
// sampling fields. Unknown request fields are refused (fields.go). Pointer
// fields distinguish "absent" from zero.

// streamOptions is OpenAI's stream_options.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// samplingFields are the fields completions and chat share.
type samplingFields struct {
	Model            string             `json:"model"`
	N                *int               `json:"n"`
	BestOf           *int               `json:"best_of"`
	Temperature      *float64           `json:"temperature"`
	TopP             *float64           `json:"top_p"`
	MaxTokens        *int               `json:"max_tokens"`
	Stop             stringList         `json:"stop"`
	Seed             *int64             `json:"seed"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	User             string             `json:"user"`
	Stream           bool               `json:"stream"`
	StreamOptions    *streamOptions     `json:"stream_options"`

	// vLLM's extra sampling parameters.
	TopK                   *int     `json:"top_k"`
	MinP                   *float64 `json:"min_p"`
	RepetitionPenalty      *float64 `json:"repetition_penalty"`
	MinTokens              *int     `json:"min_tokens"`
	IgnoreEOS              bool     `json:"ignore_eos"`
	StopTokenIDs           []int32  `json:"stop_token_ids"`
	IncludeStopStrInOutput bool     `json:"include_stop_str_in_output"`
	SkipSpecialTokens      *bool    `json:"skip_special_tokens"`
	Priority               int      `json:"priority"`
	UseBeamSearch          bool     `json:"use_beam_search"`
	LengthPenalty          *float64 `json:"length_penalty"`
	EarlyStopping          bool     `json:"early_stopping"`
	PromptLogprobs         *int     `json:"prompt_logprobs"`

	// Structured outputs, in every spelling (structured.go).
	guidedFields
}

// includeUsage reports whether a stream ends with a usage chunk.
func (f *samplingFields) includeUsage() bool {
	return f.StreamOptions != nil && f.StreamOptions.IncludeUsage
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	samplingFields
	Prompt           json.RawMessage `json:"prompt"`
	Logprobs         *int            `json:"logprobs"`
	Echo             bool            `json:"echo"`
	Suffix           string          `json:"suffix"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	samplingFields
	Messages             []chatMessage  `json:"messages"`
	MaxCompletionTokens  *int           `json:"max_completion_tokens"`
	Logprobs             bool           `json:"logprobs"`
	TopLogprobs          *int           `json:"top_logprobs"`
	AddGenerationPrompt  *bool          `json:"add_generation_prompt"`
	ContinueFinalMessage bool           `json:"continue_final_message"`
	AddSpecialTokens     bool           `json:"add_special_tokens"`
	ChatTemplateKwargs   map[string]any `json:"chat_template_kwargs"`
	// IncludeReasoning false leaves the reasoning out of the response
	// (vLLM's and SGLang's include_reasoning); it is still generated.
	IncludeReasoning *bool `json:"include_reasoning"`
	// ReasoningEffort is OpenAI's reasoning_effort: the chat template's
	// variable reasoning_effort, as vLLM passes it (chat_template_kwargs
	// win over it); thinking models' templates read it.
	ReasoningEffort *string `json:"reasoning_effort"`
	// ThinkingTokenBudget is vLLM's thinking_token_budget: at most this
	// many tokens of reasoning, then the end of the reasoning is forced
	// (planThinkingBudget). It needs a reasoning parser or harmony.
	ThinkingTokenBudget *int `json:"thinking_token_budget"`

	// Tool calling (tools.go).
	Tools             []toolDef       `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
}

// chatMessage is one input message; Content is a string, a list of content
// parts, or null.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// ReasoningContent is an earlier assistant turn's reasoning (vLLM's
	// field), passed to the template as reasoning_content and, for
	// gpt-oss's, thinking (as llama.cpp passes it).
	ReasoningContent string `json:"reasoning_content"`
}

// stringList decodes a JSON string or list of strings (OpenAI's stop).
type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings")
	}
	*s = many
	return nil
}

// usage is OpenAI's token accounting. CompletionTokensDetails is set on
// chat completions when a reasoning parser runs.
type usage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	PromptTokensDetails     *promptDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func newUsage(prompt, completion, cached int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion,
		PromptTokensDetails: &promptDetails{CachedTokens: cached}}
}

// response is the envelope of every completion, chat completion and
// chunk: Object names which (text_completion, chat.completion,
// chat.completion.chunk).
type response[C any] struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []C    `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

// completionResponse is a completion, or one chunk of a streamed one.
type completionResponse = response[completionChoice]

type completionChoice struct {
	Index    int                 `json:"index"`
	Text     string              `json:"text"`
	Logprobs *completionLogprobs `json:"logprobs"`
	finish
	// PromptLogprobs is vLLM's prompt_logprobs: one entry per prompt
	// token, null for the first.
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs,omitempty"`
}

// finish ends every choice: how its sequence finished, both null while
// it runs (in every chunk but its last).
type finish struct {
	FinishReason *string `json:"finish_reason"`
	StopReason   any     `json:"stop_reason"`
}

// promptLogprob is one token of a prompt_logprobs entry (vLLM's Logprob).
type promptLogprob struct {
	Logprob      float64 `json:"logprob"`
	Rank         int     `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

// completionLogprobs is the legacy completions logprobs shape. Entries are
// null for the first echoed prompt token, which has no logprob.
type completionLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// chatResponse is a chat completion (object chat.completion).
type chatResponse struct {
	response[chatChoice]
	// PromptLogprobs is vLLM's prompt_logprobs (see completionChoice).
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs,omitempty"`
}

type chatChoice struct {
	Index    int           `json:"index"`
	Message  chatOutput    `json:"message"`
	Logprobs *chatLogprobs `json:"logprobs"`
	finish
}

// chatOutput is the message of a choice: content is null when the model
// answered with tool calls only, or thought and gave no answer.
// ReasoningContent is the reasoning a reasoning parser read (vLLM's field).
type chatOutput struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

// chatChunk is one chunk of a streamed chat completion (object
// chat.completion.chunk).
type chatChunk = response[chatChunkChoice]

type chatChunkChoice struct {
	Index    int           `json:"index"`
	Delta    chatDelta     `json:"delta"`
	Logprobs *chatLogprobs `json:"logprobs"`
	finish
}

type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

// chatLogprobs is the chat logprobs shape. Bytes are JSON numbers (a
// []byte would marshal as base64).
type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

// chatTokenLogprob is a chosen token and its alternatives.
type chatTokenLogprob struct {
	chatTopLogprob
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// modelList is GET /v1/models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
}
