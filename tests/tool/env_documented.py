#!/usr/bin/env python3
"""Every environment variable of sdm's own (SDM_*) or of CUDA's (CUDA_*) that libsdm or the tool
reads (getenv, platform::env, env_list, switch_on over archive/, runtime/, capi/, common/, tools/)
is a row of docs/HOSTS.md's "## Environment" table, which the man pages' ENVIRONMENT is made from
(tools/man_include.py); and every row is a variable the source reads. Usage: env_documented.py
SOURCE_ROOT. Exit 1 naming each variable missing from the table and each row nothing reads."""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
read = {}
for folder in ("archive", "runtime", "capi", "common", "tools"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix in (".cpp", ".hpp", ".h", ".c"):
            for m in re.finditer(r'\b(?:getenv|env|env_list|switch_on)\("((?:SDM|CUDA)_[A-Z0-9_]+)"\)', path.read_text()):
                read.setdefault(m.group(1), str(path.relative_to(root)))
hosts = (root / "docs" / "HOSTS.md").read_text().splitlines()
start = hosts.index("## Environment")
end = next((i for i in range(start + 1, len(hosts)) if hosts[i].startswith("## ")), len(hosts))
documented = {m.group(1) for line in hosts[start:end] if (m := re.match(r"\| `([A-Z0-9_]+)` \|", line))}
failures = [f"{name} (read in {where}) is not in docs/HOSTS.md's Environment table" for name, where in sorted(read.items()) if name not in documented]
failures += [f"docs/HOSTS.md's Environment table lists {name}, which no source reads" for name in sorted(documented - read.keys())]
for f in failures:
    print(f, file=sys.stderr)
print(f"env_documented: {len(read)} variables read, {len(documented)} documented, {len(failures)} problems")
sys.exit(1 if failures or not read else 0)
