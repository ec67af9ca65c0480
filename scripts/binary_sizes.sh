#!/usr/bin/env bash
# Builds every function's arm64 binary as `sam build` does (cargo-lambda, `--release --arm64`,
# CargoLambda.toml's settings) and checks each against the budget of its row
# (`max_bytes` in lib/assembly/src/functions.rs). Ends with "N passed, M failed".
# cargo-lambda and ziglang (its cross-linker, about 400 MB) come from PyPI into .venv, pinned.
# Usage: scripts/binary_sizes.sh   (CARGO_TARGET_DIR is honoured, as cargo does)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/common.sh
. scripts/common.sh

CARGO_LAMBDA_VERSION=1.9.2
ZIGLANG_VERSION=0.17.1

python_env
installed=$(.venv/bin/cargo-lambda lambda --version 2>/dev/null || true)
if [ "${installed%% (*}" != "cargo-lambda ${CARGO_LAMBDA_VERSION}" ] \
  || ! .venv/bin/python -c 'import ziglang' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check \
    "cargo-lambda==${CARGO_LAMBDA_VERSION}" "ziglang==${ZIGLANG_VERSION}"
fi
export PATH="$PWD/.venv/bin:$PATH"
target="${CARGO_TARGET_DIR:-target}"
status=0
cargo lambda build --release --arm64 --package knowledge-functions || status=$?
if [ "$status" -ne 0 ]; then
  echo "0 passed, 1 failed"
  exit 1
fi
# The test runs in its package's directory: give it the binaries' absolute path.
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
KNOWLEDGE_LAMBDA_DIR="$target/lambda" cargo test --locked -p knowledge-assembly --test functions \
  every_functions_arm64_binary_fits_the_budget_of_its_row -- --nocapture || status=$?
if [ "$status" -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit "$status"
