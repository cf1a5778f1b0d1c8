#!/usr/bin/env bash
# `sdm verify` on each golden corrupt archive (tests/golden/corrupt/NAME.sdma) must exit 1 with
# the message in NAME.expect; on the intact goldens it must exit 0. Usage: verify_corrupt.sh SDM GOLDEN_DIR
set -uo pipefail
sdm=$1 golden=$2
failed=0 count=0
for f in "$golden"/corrupt/*.sdma; do
  count=$((count + 1))
  want=$(cat "${f%.sdma}.expect")
  err=$("$sdm" verify "$f" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 1 ]; then echo "FAIL: $f: exit $rc"; failed=1; continue; fi
  case "$err" in *"$want"*) ;; *) echo "FAIL: $f: '$err' lacks '$want'"; failed=1 ;; esac
done
[ $count -ge 10 ] || { echo "FAIL: only $count corrupt goldens"; failed=1; }
"$sdm" verify -q "$golden/kernels.sdma" "$golden/kernels-stored.sdma" || { echo "FAIL: intact goldens do not verify"; failed=1; }
[ $failed = 0 ] && echo "verify_corrupt: $count corrupt archives refused"
exit $failed
