#!/usr/bin/env bash
# Copy the UI's pinned third-party browser code (package.json, package-lock.json) into
# ../static/vendor, which trajhub serves and the Python package ships. Run it after changing a
# pin; tests/test_ui_vendor.py fails while the copies differ from what the lockfile installs.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --ignore-scripts --no-audit --no-fund >/dev/null
out=../static/vendor/uplot
rm -rf "$out" && mkdir -p "$out"
for f in dist/uPlot.esm.js dist/uPlot.min.css LICENSE; do
    cp "node_modules/uplot/$f" "$out/"
done
echo "copied uplot $(node -p "require('./node_modules/uplot/package.json').version") to $out"
