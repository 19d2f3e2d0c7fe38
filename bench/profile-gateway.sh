#!/usr/bin/env bash
# Profiles the gateway process under load (CPU profile written to .data/prof/). Not part of the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .data/prof
BENCH_PROFILE=1 BENCH_SAMPLES=${BENCH_SAMPLES:-1000} BENCH_SECONDS=${BENCH_SECONDS:-4} npx tsx bench/run.ts
