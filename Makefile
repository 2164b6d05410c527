# pagoda — the two commands that do everything on a fresh machine:
#   make serve   obtain the default model if missing, then serve it
#   make test    obtain the default model if missing, then run every test
GO          ?= go
PAGODA_MODELS ?= $(HOME)/.cache/pagoda/models
export PAGODA_MODELS
DEFAULT_MODEL := $(PAGODA_MODELS)/SmolLM2-135M-Instruct.Q4_1.gguf
BIN         := bin/pagoda
PROMPT      ?= What is the capital of France?

.PHONY: all build model serve test vet fmt-check bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pagoda

# The default model, and pristine copies of llama.cpp's vocabulary test files
# (the shared copies were damaged in transit; see tokenizer/testdata/README.md).
model:
	@bash scripts/fetch-model.sh
	@bash scripts/fetch-ggml-vocab.sh

serve: model build
	./$(BIN) generate --model $(DEFAULT_MODEL) --chat --prompt "$(PROMPT)" --max-tokens 128

test: model fmt-check vet
	$(GO) test -race -timeout 60m ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

bench: model build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf bin
