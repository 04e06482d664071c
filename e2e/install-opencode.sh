#!/usr/bin/env bash
# Installs the pinned opencode-ai npm package into a cache folder that the
# e2e suite reuses: $THATCH_E2E_CACHE (default ~/.cache/thatch-e2e)/opencode-<version>.
# Prints the path of the opencode binary. Safe to run again: it does nothing
# when the pinned version is already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(tr -d '[:space:]' < "$here/opencode.version")"
cache="${THATCH_E2E_CACHE:-$HOME/.cache/thatch-e2e}"
prefix="$cache/opencode-$version"
bin="$prefix/node_modules/.bin/opencode"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$version"; then
  echo "$bin"
  exit 0
fi
command -v npm >/dev/null || { echo "install-opencode: npm is required (apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$prefix"
echo "install-opencode: installing opencode-ai@$version into $prefix" >&2
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "opencode-ai@$version" >&2
"$bin" --version >&2
echo "$bin"
