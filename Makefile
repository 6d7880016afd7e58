# Two commands on a fresh clone:  make demo  (set up, run optpatch on the example)
#                                 make test  (set up, run the whole test suite)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU wheel of torch; a machine that already has torch (a GPU box) keeps its own.
TORCH_PIN ?= torch==2.13.0

.PHONY: setup demo test docs dist clean new-rule

# What the demo needs, and no more: optpatch and its own dependencies (no torch, no test tools, no downloads).
$(VENV)/.demo-ready: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e .
	touch $@

setup: $(VENV)/.ready

$(VENV)/.ready: pyproject.toml
	@if $(PYTHON) -c "import torch" >/dev/null 2>&1; then \
		echo "Using the torch already installed: $$($(PYTHON) -c 'import torch; print(torch.__version__)')"; \
		$(PYTHON) -m venv --system-site-packages $(VENV); \
	else \
		$(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q --disable-pip-version-check "$(TORCH_PIN)"; \
	fi
	$(BIN)/pip install -q --disable-pip-version-check -e ".[validate,test]"
	@# ruff 0.11 beside the test extra's 0.12: the formatter tests check edits with both (tests/formatters.py).
	$(BIN)/pip install -q --disable-pip-version-check --target $(VENV)/formatters/ruff-0.11 "ruff>=0.11,<0.12"
	@# Headers of cuBLAS/cuSPARSE/cuSOLVER that the tests' nvcc compiles of torch extensions need on a
	@# machine without a CUDA build of torch: about 750 MB downloaded once (with progress), 1 MB kept;
	@# nothing when the headers are installed or kept already, or without nvcc.
	@if command -v nvcc >/dev/null 2>&1; then $(BIN)/python -m kernels.build_check fetch-headers; fi
	touch $@

demo: $(VENV)/.demo-ready
	$(BIN)/optpatch apply examples/minivllm -o model_patch.diff
	@tmp=$$(mktemp -d) && cp -r examples/minivllm/. $$tmp && \
		(cd $$tmp && git apply --check $(CURDIR)/model_patch.diff) && \
		echo "git apply --check: model_patch.diff applies to a pristine copy of examples/minivllm" && \
		rm -rf $$tmp

test: setup
	$(BIN)/python -m pytest

# A wheel to install optpatch into any environment (README, "Installing"): dist/optpatch-VERSION-py3-none-any.whl.
dist:
	$(PYTHON) -m pip wheel -q --disable-pip-version-check --no-deps -w dist .

clean:
	rm -rf $(VENV) model_patch.diff .pytest_cache dist

docs: setup
	$(BIN)/optpatch rules --write-docs docs/rules

# A new rule's skeleton: rules/CODE/rule.py, its fixture and docs page (docs/architecture.md, "A new rule").
# LANGUAGE=cpp for a C++/CUDA rule (default: python).
LANGUAGE ?= python
new-rule:
	@test -n "$(CODE)" -a -n "$(NAME)" || { echo "usage: make new-rule CODE=OPT104 NAME=my-rule [LANGUAGE=cpp]" >&2; exit 2; }
	$(BIN)/python -m optpatch.dev new-rule $(CODE) $(NAME) --language $(LANGUAGE)
