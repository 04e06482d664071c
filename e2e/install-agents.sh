#!/usr/bin/env bash
# Installs the pinned Claude Code and Codex CLIs (npm packages
# @anthropic-ai/claude-code and @openai/codex, versions in claude.version and
# codex.version) into cache folders that the e2e suite reuses:
# $THATCH_E2E_CACHE (default ~/.cache/thatch-e2e)/claude-code-<version> and
# .../codex-<version>. Prints two lines:
#   claude=<the native claude binary>
#   codex=<the native codex binary, or the node_modules/.bin/codex wrapper>
# Safe to run again: a package whose binary already answers --version with
# the pinned version is not installed again.
#
# Both packages ship their native binaries as per-platform optional
# dependencies. claude's wrapper package copies its binary over
# bin/claude.exe in a postinstall script that npm may skip (and that wants
# node >= 22), so the script never relies on it: it points at the platform
# package's binary itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${THATCH_E2E_CACHE:-$HOME/.cache/thatch-e2e}"
claude_version="$(tr -d '[:space:]' < "$here/claude.version")"
codex_version="$(tr -d '[:space:]' < "$here/codex.version")"

die() { echo "install-agents: $*" >&2; exit 1; }

os="$(uname -s)"
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 triple_arch=x86_64 ;;
  aarch64 | arm64) arch=arm64 triple_arch=aarch64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac
case "$os" in
  Linux)
    claude_platform="linux-$arch"
    # claude has musl builds of its own; codex ships musl builds only.
    if ls /lib/ld-musl-* >/dev/null 2>&1; then claude_platform="linux-$arch-musl"; fi
    codex_triple="$triple_arch-unknown-linux-musl" ;;
  Darwin)
    claude_platform="darwin-$arch"
    codex_triple="$triple_arch-apple-darwin" ;;
  *) die "unsupported OS $os" ;;
esac

claude_prefix="$cache/claude-code-$claude_version"
claude_bin="$claude_prefix/node_modules/@anthropic-ai/claude-code-$claude_platform/claude"
codex_prefix="$cache/codex-$codex_version"
codex_native="$codex_prefix/node_modules/@openai/codex-$(echo "$claude_platform" | sed 's/-musl$//')/vendor/$codex_triple/bin/codex"
codex_wrapper="$codex_prefix/node_modules/.bin/codex"

# answers BIN VERSION: BIN runs and reports VERSION.
answers() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qF "$2"; }

# install PACKAGE@VERSION PREFIX
install() {
  command -v npm >/dev/null || die "npm is required (apt-get install nodejs npm)"
  mkdir -p "$2"
  echo "install-agents: installing $1 into $2" >&2
  # --include=optional: the native binaries are optional dependencies.
  npm install --prefix "$2" --no-audit --no-fund --loglevel=error --include=optional "$1" >&2
}

if ! answers "$claude_bin" "$claude_version"; then
  install "@anthropic-ai/claude-code@$claude_version" "$claude_prefix"
  answers "$claude_bin" "$claude_version" || die "no working claude $claude_version at $claude_bin"
fi

codex_bin="$codex_native"
if ! answers "$codex_bin" "$codex_version"; then
  install "@openai/codex@$codex_version" "$codex_prefix"
  if ! answers "$codex_bin" "$codex_version"; then
    codex_bin="$codex_wrapper"
    answers "$codex_bin" "$codex_version" || die "no working codex $codex_version under $codex_prefix"
  fi
fi

echo "claude=$claude_bin"
echo "codex=$codex_bin"
