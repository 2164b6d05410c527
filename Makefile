# pagoda — the two commands that do everything on a fresh machine:
#   make serve   obtain the default model if missing, then serve it
#   make test    obtain the default model if missing, then run every test
GO          ?= go
PAGODA_MODELS ?= $(HOME)/.cache/pagoda/models
export PAGODA_MODELS
DEFAULT_MODEL := $(PAGODA_MODELS)/SmolLM2-135M-Instruct.Q4_1.gguf
BIN         := bin/pagoda

.PHONY: all build model deps serve test vet fmt-check bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pagoda

# The default model, and pristine copies of llama.cpp's vocabulary test files
# (the shared copies were damaged in transit; see tokenizer/testdata/README.md).
model:
	@bash scripts/fetch-model.sh
	@bash scripts/fetch-ggml-vocab.sh

serve: model build
	./$(BIN) serve smollm2

# Test tools from Debian: promtool (package prometheus) checks the /metrics
# exposition; python3-venv lets the end-to-end test install the OpenAI client.
# Installed only when missing, and only as root (otherwise: a hint).
deps:
	@need=""; \
	command -v promtool >/dev/null 2>&1 || need="$$need prometheus"; \
	python3 -m venv --help >/dev/null 2>&1 || need="$$need python3-venv"; \
	if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$need; \
	  else \
	    echo "missing test tools:$$need (install them: sudo apt-get install$$need)"; \
	  fi; \
	fi

# The check that regenerating the assembly (kernels/_asm, its own module)
# changes nothing; every test at full size, then again under the race
# detector with -short (which shrinks only the model-heavy workloads).
test: model deps fmt-check vet
	cd kernels/_asm && $(GO) test -count=1 ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -race -short -timeout 40m ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

bench: model build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf bin
