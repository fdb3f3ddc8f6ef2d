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

.PHONY: all deps check-deps configure build tour test figures bench probe gpu grade clean

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
