# convlab — the two commands of the README, and the steps they are made of.
#
#   make tour   install what is missing, build, run the lesson tour
#   make test   install what is missing, build, run every test (GPU tests skip without a GPU)
#   make figures  regenerate the committed figures (notebooks/figures/, lessons/13-*/figures/)
#               and lesson 13's table from the committed benchmark JSON
#   make grade SUBMISSIONS=class/ ASSIGNMENT=hw.txt   grade a class (docs/grading.md)
#
# Everything real happens in CMake and the programs; this file only strings
# the steps together so that a fresh machine needs nothing installed by hand.

BUILD   ?= build
JOBS    ?= $(shell nproc)
CMAKE_ARGS ?=
# The notebooks' Python (make deps prepares it).
PYTHON  ?= $(CURDIR)/.venv/bin/python
# Lets a clone in another folder (CI) reuse this machine's compile cache.
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps check-deps configure build tour test test-sanitize fuzz figures bench probe gpu grade clean

all: build

# Installs what is missing, then checks every package the build loads (one line if all is there).
deps:
	@scripts/install-deps.sh

# Only the check: every Debian package, CMake package and Python module, and what is missing.
check-deps:
	@scripts/install-deps.sh --check

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCONVLAB_PYTHON=$(CURDIR)/.venv/bin/python $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

tour: build
	@$(BUILD)/convlab tour --json $(BUILD)/tour.json

test: build
	@cd $(BUILD) && ctest -j $(JOBS) --output-on-failure

# The one command that rewrites the committed figures: the notebooks run with
# no CONVLAB_FIG_DIR, so they write where the lessons link to. (`make test`
# runs the same notebooks with their figures under $(BUILD)/figures/.)
figures: build
	@for nb in notebooks/01-roofline.ipynb notebooks/13-efficiency/13-efficiency.ipynb; do \
	  (cd $$(dirname $$nb) && MPLBACKEND=Agg CONVLAB_BIN=$(CURDIR)/$(BUILD)/convlab \
	    $(PYTHON) -m jupyter nbconvert --to notebook --execute \
	    --ExecutePreprocessor.timeout=600 --output-dir $(CURDIR)/$(BUILD)/executed-notebooks $$(basename $$nb)) || exit 1; \
	done

# The CPU code (no CUDA) built with AddressSanitizer and UBSan in a build
# folder of its own, and the CTest suite run under them: every test, the fuzz
# loops (tests/fuzz/) and the convlab program the app tests start; any report
# fails the run. -O1 keeps the tests quick and the stacks readable. Left out:
# the probe's speed check ("CPU peaks are positive and plausible"), which
# would measure the instrumentation, not the machine; and the two grading
# tests that run submissions, whose sandbox caps the address space (RLIMIT_AS),
# which ASan's shadow memory cannot live under (they run in `make test`). ASan's
# detect_stack_use_after_return stays off: with GCC 12 it faults inside
# Catch's large test frames (a false report, seen on the reference tests).
SANITIZE_BUILD ?= build-sanitize
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SANITIZE_CTEST_ARGS ?= -E "^probe: CPU peaks are positive and plausible$$|^grading/(class|report_in_browser)"
test-sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCONVLAB_CUDA=OFF -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZE_FLAGS)" >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target convlab_tests convlab
	@cd $(SANITIZE_BUILD) && \
	  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest -j $(JOBS) --output-on-failure $(SANITIZE_CTEST_ARGS)

# Coverage-guided fuzzing of the same harnesses with libFuzzer (clang), by hand:
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_HARNESSES="npy json options"]
# Each harness keeps its corpus in build-fuzz/corpus/NAME (seeded on first run);
# a crash is saved as build-fuzz/crash-* and the run stops with its report.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_HARNESSES ?= npy json options
fuzz: deps
	@command -v clang++ >/dev/null || { echo "make fuzz needs clang: apt-get install clang libclang-rt-14-dev libomp-dev"; exit 2; }
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCONVLAB_CUDA=OFF -DCONVLAB_FUZZ=ON \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g" \
	  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer" >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix convlab_fuzz_,$(FUZZ_HARNESSES))
	@set -e; cd $(FUZZ_BUILD); for h in $(FUZZ_HARNESSES); do \
	  mkdir -p corpus/$$h; echo "==== fuzz $$h for $(FUZZ_SECONDS) s"; \
	  CONVLAB_FUZZ_SEEDS=corpus/$$h ./convlab_fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -print_final_stats=1 corpus/$$h > fuzz-$$h.log 2>&1 || { tail -n 60 fuzz-$$h.log; exit 1; }; \
	  tail -n 14 fuzz-$$h.log; done

bench: build
	@$(BUILD)/convlab_bench --benchmark_out=$(BUILD)/bench.json --benchmark_out_format=json

probe: build
	@$(BUILD)/convlab probe

# A class's submissions, graded (docs/grading.md). GRADE_ARGS passes more options, e.g.
#   make grade SUBMISSIONS=class/ ASSIGNMENT=hw3.txt GRADE_ARGS="--hidden ~/hidden-gemm.txt --out hw3-report"
grade: build
	@test -n "$(SUBMISSIONS)" || { echo "make grade: give SUBMISSIONS=FOLDER (one folder per student; see docs/grading.md)" >&2; exit 2; }
	@$(BUILD)/convlab grade $(SUBMISSIONS) $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT)) $(GRADE_ARGS)

# On the lent GPU machine (see README "Running on a GPU").
gpu:
	@bench/run_gpu.sh

clean:
	rm -rf $(BUILD)
