#!/usr/bin/env bash
# Snakemake runs this once after creating the environment: install sentrepro itself from the checkout.
set -euo pipefail
pip install --no-deps -e "$(dirname "$0")/.."
