#!/usr/bin/env bash
# Regenerates ops/latentd.conf and the settings table in docs/operations.md
# ("## Settings": the Markdown table whose first line starts "| setting (")
# from the daemon's settings table (service/daemon_settings_table.cc), so that
# neither can drift from `latentd --help`.
# Usage: ops/refresh-settings-docs.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
LATENTD=${1:-build}/cli/latentd
"$LATENTD" --print-config >ops/latentd.conf
python3 - "$LATENTD" <<'PY'
import subprocess, sys
table = subprocess.run([sys.argv[1], "--print-docs"], check=True,
                       capture_output=True, text=True).stdout.splitlines()
lines = open("docs/operations.md").read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith("| setting ("))
end = start
while end < len(lines) and lines[end].startswith("|"):
    end += 1
lines[start:end] = table
open("docs/operations.md", "w").write("\n".join(lines) + "\n")
PY
