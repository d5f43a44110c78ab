#!/usr/bin/env bash
# Builds the Collector distribution of deploy/otelcol-builder.yaml, unless it is built already,
# and prints the binary's path (the only line on stdout; ocb's and go's output go to stderr).
#
#   "$(deploy/otelcol-build.sh)" validate --config deploy/otel-collector.yaml
#
# Needs Go (the release's go.mod files require 1.26) and the Go module proxy. Everything goes
# outside the repository: ocb into $cache/ocb-$OCB_VERSION, each build into $cache/<key>, where
# the key hashes the manifest and OCB_VERSION, so a changed manifest builds anew and an
# unchanged one never does. $cache is $TRAJHUB_OTELCOL_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/trajhub/otelcol. Go's own caches (GOMODCACHE, GOCACHE) are
# whatever the environment says.
set -euo pipefail

# ocb of the same release as the manifest's components (deploy/otelcol-builder.yaml)
OCB_VERSION=v0.161.0

here=$(cd "$(dirname "$0")" && pwd)
manifest=$here/otelcol-builder.yaml
cache=${TRAJHUB_OTELCOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trajhub/otelcol}
# comment and blank lines left out of the key: editing the manifest's prose rebuilds nothing
key=$({ echo "$OCB_VERSION"; grep -Ev '^[[:space:]]*(#|$)' "$manifest"; } | sha256sum | cut -c1-16)
out=$cache/$key
binary=$out/otelcol-trajhub/otelcol-trajhub

if [ -x "$binary" ]; then
    echo "$binary"
    exit 0
fi
mkdir -p "$cache"
# one build at a time (parallel test workers, a bench next to the tests): the others wait,
# then find the binary
exec 9>"$cache/build.lock"
if command -v flock >/dev/null; then flock 9; fi
if [ ! -x "$binary" ]; then
    command -v go >/dev/null || { echo "otelcol-build: needs Go (https://go.dev/dl/)" >&2; exit 1; }
    ocb=$cache/ocb-$OCB_VERSION/builder
    if [ ! -x "$ocb" ]; then
        GOBIN=$cache/ocb-$OCB_VERSION go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION" >&2
    fi
    # built in a scratch directory and moved into place whole, so an interrupted build never
    # leaves a half-written binary where the next run would take it as built
    work=$(mktemp -d "$cache/build.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && "$ocb" --config "$manifest") >&2
    rm -rf "$out"
    mv "$work" "$out"
    trap - EXIT
fi
echo "$binary"
