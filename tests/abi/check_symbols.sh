#!/usr/bin/env bash
# The symbols libsdm exports must be exactly tests/abi/symbols.txt: the C ABI and nothing else
# (no C++ internals, no zstd or xxHash). capi/gen_abi.py writes that list from sdm.h (its `#`
# lines are comments), in byte order: hence `LC_ALL=C sort`. Usage: check_symbols.sh LIBSDM SYMBOLS_TXT
set -euo pipefail
actual=$(nm -D --defined-only "$1" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@@.*//' | LC_ALL=C sort)
if ! diff -u <(grep -v '^#' "$2") <(echo "$actual"); then
  echo "FAIL: libsdm's exported symbols differ from $2 (+ exported, - expected)" >&2
  exit 1
fi
nm -D --defined-only "$1" | grep ' SDM_1$' >/dev/null || { echo "FAIL: no SDM_1 version node" >&2; exit 1; }
echo "symbols: $(echo "$actual" | wc -l) exported, as listed"
