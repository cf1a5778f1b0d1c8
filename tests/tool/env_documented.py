#!/usr/bin/env python3
"""The environment variables are written once, in code: the table kSettings of
runtime/platform/settings.cpp (name, type, default, grammar, bad-value policy, doc line), which
every read goes through. This checks the rest against it:
- docs/HOSTS.md's "## Environment" table (which the man pages' ENVIRONMENT is made from,
  tools/man_include.py) lists every variable of the code table, by the same name and in the same
  order, and no variable the code table lacks;
- no other source of archive/, runtime/, capi/, common/ or tools/ reads an SDM_ or CUDA_ variable
  itself (getenv, platform::env, env_list): a read outside the table would have its own grammar.
Usage: env_documented.py SOURCE_ROOT. Exit 1 naming each difference."""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
settings = root / "runtime" / "platform" / "settings.cpp"
table = re.findall(r'\.name = "([A-Z0-9_]+)"', settings.read_text())
failures = []
if len(set(table)) != len(table):
    failures.append(f"{settings.relative_to(root)} names a variable twice")

for folder in ("archive", "runtime", "capi", "common", "tools"):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix in (".cpp", ".hpp", ".h", ".c") and path != settings:
            for m in re.finditer(r'\b(?:getenv|env|env_list)\("((?:SDM|CUDA)_[A-Z0-9_]+)"\)', path.read_text()):
                failures.append(f"{path.relative_to(root)} reads {m.group(1)} itself; read it through runtime/platform/settings.hpp")

hosts = (root / "docs" / "HOSTS.md").read_text().splitlines()
start = hosts.index("## Environment")
end = next((i for i in range(start + 1, len(hosts)) if hosts[i].startswith("## ")), len(hosts))
documented = [m.group(1) for line in hosts[start:end] if (m := re.match(r"\| `([A-Z0-9_]+)` \|", line))]
failures += [f"{name} (in {settings.relative_to(root)}) is not in docs/HOSTS.md's Environment table" for name in table if name not in documented]
failures += [f"docs/HOSTS.md's Environment table lists {name}, which {settings.relative_to(root)} lacks" for name in documented if name not in table]
if not failures and documented != table:
    failures.append("docs/HOSTS.md's Environment table is not in the order of the code table: " + ", ".join(table))
for f in failures:
    print(f, file=sys.stderr)
print(f"env_documented: {len(table)} variables in the code table, {len(documented)} documented, {len(failures)} problems")
sys.exit(1 if failures or not table else 0)
