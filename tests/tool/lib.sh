# What the tool tests that stop at the first failure share (cli.sh, import.sh): a work directory
# removed at exit, fail, and expect_fail. Sourced after `set -euo pipefail`.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_fail() {  # expect_fail SUBSTRING command...: the command fails and its stderr holds SUBSTRING
  local want=$1; shift
  if "$@" >"$work/out" 2>"$work/err"; then fail "succeeded: $*"; fi
  grep -qF -- "$want" "$work/err" || { cat "$work/err" >&2; fail "stderr of '$*' lacks '$want'"; }
}
