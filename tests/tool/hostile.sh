#!/usr/bin/env bash
# The command line against hostile input (docs/RELIABILITY.md, the threat model): archives from
# tests/forge (valid checksums, hostile content), links and files planted where `sdm extract`
# writes, a damaged manifest for `sdm ls`, terminal escapes in archive text, TOML nested to crash
# a parser, cache directories that do not exist or are not the user's, an unknown command.
# Usage: hostile.sh SDM FORGE_TOOL DATA_DIR
set -uo pipefail
sdm=$1 forge=$2 data=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
expect() {  # expect CODE TEXT COMMAND...: exits CODE and says TEXT on stderr
  local code=$1 want=$2; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  [ $rc = "$code" ] || fail "$* exited $rc, not $code: $(cat "$work/err")"
  grep -qF -- "$want" "$work/err" || fail "$*: '$(cat "$work/err")' lacks '$want'"
}
cubin=$data/kernels.sm_90.cubin

# A module name that is a path: refused by every command that opens the archive; nothing written anywhere.
"$forge" traversal "$work/traversal.sdma" "$cubin"
mkdir -p "$work/x/deep"
expect 1 "contains '/'" "$sdm" verify "$work/traversal.sdma"
expect 1 "contains '/'" "$sdm" extract "$work/traversal.sdma" -C "$work/x/deep"
[ -z "$(find "$work/x" -type f)" ] && [ ! -e "$work/escape.sm_90.cubin" ] || fail "extract wrote files for a traversing name"
expect 1 "names are printable ASCII characters" "$sdm" pack -o "$work/p.sdma" "a/../b:sm_90=$cubin"

# sdm extract writes only what it creates, inside -C, never through a link.
"$forge" good "$work/good.sdma" "$cubin"
mkdir -p "$work/out1" && echo outside >"$work/outside"
ln -s "$work/outside" "$work/out1/kernels.sm_90.cubin"
expect 1 "already exists; it was left alone" "$sdm" extract "$work/good.sdma" -C "$work/out1"
expect 1 "exists and is not a regular file" "$sdm" extract --force "$work/good.sdma" -C "$work/out1"
[ "$(cat "$work/outside")" = outside ] || fail "extract wrote through a link"
mkdir -p "$work/out2" && echo old >"$work/out2/kernels.sm_90.cubin"
expect 1 "already exists" "$sdm" extract "$work/good.sdma" -C "$work/out2"
[ "$(cat "$work/out2/kernels.sm_90.cubin")" = old ] || fail "extract replaced a file without --force"
"$sdm" extract --force "$work/good.sdma" -C "$work/out2" >/dev/null || fail "extract --force"
cmp -s "$work/out2/kernels.sm_90.cubin" "$cubin" || fail "extract --force did not write the cubin"

# sdm ls: a manifest that does not decode fails the command (after the entries), never silently.
"$forge" bad-manifest "$work/bad.sdma" "$cubin"
expect 1 "manifest manifest (entry 1) of archive $work/bad.sdma: manifest: top level: item of 47 bytes runs past its container" "$sdm" ls "$work/bad.sdma"
grep -q "kernels" "$work/out" || fail "sdm ls printed no entries before the error"
expect 1 "runs past its container" "$sdm" ls --json "$work/bad.sdma"
python3 -c "import json,sys; json.load(open('$work/out'))" || fail "sdm ls --json printed no JSON before the error"
expect 2 "runs past its container" "$sdm" diff "$work/bad.sdma" "$work/good.sdma"

# Text from an archive is printed escaped: no escape sequence reaches the terminal.
"$forge" created-by "$work/cb.sdma" "$cubin"
"$sdm" ls "$work/cb.sdma" >"$work/ls.txt" 2>&1 || fail "sdm ls of an archive with an odd writer name"
grep -qF 'written by \x1b[2J\x1b[31mok\n' "$work/ls.txt" || fail "created_by not escaped: $(head -1 "$work/ls.txt")"
! grep -q $'\x1b' "$work/ls.txt" || fail "an escape character reached the output"
"$sdm" ls --json "$work/cb.sdma" | python3 -c "import json,sys; assert json.load(sys.stdin)['created_by'] == '\\\\x1b[2J\\\\x1b[31mok\\\\n'" || fail "ls --json created_by"

# TOML that would overflow the parser's stack: a clear error, exit 1, no crash.
python3 -c "print('a' + '.a' * 50000 + ' = 1')" >"$work/deep.toml"
expect 1 "keys on one line hold more than 16 dots" "$sdm" pack -m "$work/deep.toml" -o "$work/deep.sdma" "kernels:sm_90=$cubin"
python3 -c "print('[[' + '.'.join(['a'] * 50000) + ']]')" >"$work/headers.toml"
expect 1 "more than 16" "$sdm" pack -m "$work/headers.toml" -o "$work/deep.sdma" "kernels:sm_90=$cubin"
printf '[archive]\nkernel_abi = "-4294967295.-4294967294"\n' >"$work/wrap.toml"
expect 1 "two decimal numbers of 0..65535" "$sdm" pack -m "$work/wrap.toml" -o "$work/w.sdma" "kernels:sm_90=$cubin"
mkfifo "$work/fifo.toml"
expect 1 "is a FIFO (named pipe), not a regular file" timeout 10 "$sdm" pack -m "$work/fifo.toml" -o "$work/f.sdma" "kernels:sm_90=$cubin"
expect 1 "is a character device" timeout 10 "$sdm" verify /dev/zero

# sdm cache creates nothing: not a missing directory, not v1 inside one it refuses.
"$sdm" cache stats --dir "$work/no/such/cache" | grep "0 entries (no cache there yet; nothing was created)" >/dev/null || fail "cache stats of a missing directory"
[ ! -e "$work/no" ] || fail "sdm cache stats created a directory"
mkdir -p "$work/open" && chmod 777 "$work/open"
expect 1 "group- or world-writable (mode 0777)" "$sdm" cache clear --dir "$work/open"
[ ! -e "$work/open/v1" ] || fail "sdm cache clear created v1 in a directory it refused"
"$sdm" cache prune --json --dir "$work/no/such" | python3 -c "import json,sys; d=json.load(sys.stdin); assert d['exists'] is False and d['entries'] == 0" ||
  fail "cache prune --json is not one JSON document"

# An unknown command is named, with the nearest one.
expect 2 "'lss' is not an sdm command (did you mean 'ls'?)" "$sdm" lss "$work/good.sdma"

[ $failed = 0 ] && echo "hostile: all checks passed"
exit $failed
