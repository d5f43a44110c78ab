#!/usr/bin/env bash
# Build @cozeloop/langchain 0.0.3 from its source: the npm registry reachable here does not carry
# the @cozeloop scope. Needs a git clone of https://github.com/coze-dev/cozeloop-js (any clone
# holding the 0.0.3 release commit) and `npm ci`/`npm install` run in this folder first.
#
#   COZELOOP_JS_REPO=/path/to/cozeloop-js ./build-cozeloop.sh
#
# The library's own code is not committed: it is bundled into vendor/ (git-ignored), its imports
# (@langchain/core, @opentelemetry/*, zod) left to node_modules, as its published build does.
set -euo pipefail
REPO=${COZELOOP_JS_REPO:?set COZELOOP_JS_REPO to a git clone of coze-dev/cozeloop-js}
# "[feat] [sdk] @cozeloop/langchain@0.0.3 LangGraph span type and peer with langchain v1 (#22)"
COMMIT=01883f2fbb39145e4935c115ce8eeaee26702faf
cd "$(dirname "$0")"
rm -rf vendor && mkdir -p vendor/src
# a work-tree clone or a bare one
GIT=(git -C "$REPO"); [ -d "$REPO/.git" ] || GIT=(git --git-dir="$REPO")
"${GIT[@]}" archive "$COMMIT" packages/cozeloop-langchain/src | tar -x -C vendor/src --strip-components=3
node_modules/.bin/esbuild vendor/src/index.ts --bundle --platform=node --format=esm \
  --packages=external --define:process.env.COZELOOP_VERSION='"0.0.3"' \
  --outfile=vendor/cozeloop-langchain.mjs
echo "built vendor/cozeloop-langchain.mjs from cozeloop-js $COMMIT"
