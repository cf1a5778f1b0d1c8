#!/bin/sh
# Writes the man page of the sdm tool or of one of its commands with help2man, from the tool's own
# --help, so that the page cannot drift from the command line:
#   man.sh HELP2MAN SDM COMMAND VERSION OUTPUT PYTHON README     (COMMAND empty: sdm(1) itself)
# Its EXAMPLES and ENVIRONMENT sections come from README and the docs/ beside it (man_include.py says which parts).
# help2man runs a program's --help and names the page after it: a command's page comes from a
# two-line wrapper named sdm-COMMAND.
set -eu
help2man=$1 sdm=$2 command=$3 version=$4 output=$5 python=$6 readme=$7
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$command" ]; then
  program=$work/sdm
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$sdm" >"$program"
  name="pack, import, inspect, sign and verify sdm kernel archives"
else
  program=$work/sdm-$command
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$sdm" "$command" >"$program"
  name=$("$sdm" "$command" --help | head -1)
fi
chmod +x "$program"
"$python" "$(dirname "$0")/man_include.py" "$readme" "$command" >"$work/include"
"$help2man" --no-info --include="$work/include" --section=1 --version-string="$version" --name="$name" --output="$output" "$program"
# The wrapper's path (a temporary directory) must not appear in the page: help2man prints the
# usage line as the program printed it.
sed -i "s|$work/||g" "$output"
