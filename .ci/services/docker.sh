#!/usr/bin/env bash
# Start a Docker engine for the `docker`-marked tests: dockerd run by hand (no systemd),
# with no bridge and no iptables changes (containers use --network host or none).
# Idempotent: exits 0 at once when the engine under $BASE already answers.
# Needs root; installs docker.io with apt when dockerd is missing.
# Usage: eval "$(.ci/services/docker.sh)"   # exports DOCKER_HOST
# Stop:  kill "$(cat "${BASE:-/tmp/aka-docker}/dockerd.pid")"
set -euo pipefail
BASE=${AKA_DOCKER_BASE:-/tmp/aka-docker}
SOCK="unix://$BASE/docker.sock"
say() { echo "docker.sh: $*" >&2; }

if DOCKER_HOST=$SOCK docker info >/dev/null 2>&1; then
  say "dockerd already running at $SOCK"
  echo "export DOCKER_HOST=$SOCK"
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  say "installing docker.io (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends docker.io >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends docker.io >/dev/null; }
fi
mkdir -p "$BASE"
if [ -f "$BASE/dockerd.pid" ] && ! kill -0 "$(cat "$BASE/dockerd.pid")" 2>/dev/null; then
  rm -f "$BASE/dockerd.pid" "$BASE/docker.sock"  # a stale engine left by a killed job
fi
nohup dockerd --data-root "$BASE/data" --exec-root "$BASE/exec" -H "$SOCK" \
  --pidfile "$BASE/dockerd.pid" --bridge=none --iptables=false --ip-forward=false \
  >"$BASE/dockerd.log" 2>&1 &
for _ in $(seq 150); do
  DOCKER_HOST=$SOCK docker info >/dev/null 2>&1 && break
  sleep 0.1
done
if ! DOCKER_HOST=$SOCK docker info >/dev/null 2>&1; then
  say "dockerd did not answer within 15 s; last log lines:"
  tail -n 20 "$BASE/dockerd.log" >&2
  exit 1
fi
say "dockerd started at $SOCK"
echo "export DOCKER_HOST=$SOCK"
