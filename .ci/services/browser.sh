#!/usr/bin/env bash
# A real browser for the `browser`-marked dashboard tests: Debian's Chromium (apt) driven
# by Playwright (pip, into the project's .venv). Never runs `playwright install`: its
# browser download cannot be fetched here, and the tests launch /usr/bin/chromium.
# Idempotent: does nothing when both are present. Prints nothing on stdout (no exports
# needed); progress goes to stderr.
# Usage: eval "$(bash .ci/services/browser.sh)"
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "browser.sh: $*" >&2; }
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python

if [ ! -x /usr/bin/chromium ]; then
  say "installing chromium (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
if ! "$PY" -c "import playwright.sync_api" >/dev/null 2>&1; then
  say "installing playwright (pip)"
  "$PY" -m pip install -q "playwright>=1.45" >&2
fi
say "chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), playwright ready"
