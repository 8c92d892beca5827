#!/usr/bin/env bash
# Installs a container engine for the Testcontainers tests (test/integration/testcontainers)
# and scripts/container/build-image.sh: Debian's podman with the runc runtime, slirp4netns
# networking (mapped ports reach the host's loopback) and ulimits these machines allow.
# Idempotent and quiet on success; runs as root on Debian 12.
#
# Testcontainers talks to podman through its Docker-compatible API: the tests start
# `podman system service` on a unix socket themselves when DOCKER_HOST is not set (see
# test/helpers/container-engine.ts); by hand:
#
#   podman system service --time=0 unix:///tmp/podman.sock &
#   export DOCKER_HOST=unix:///tmp/podman.sock TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
#
# (Ryuk, Testcontainers' reaper, is an image from Docker Hub, which is not reachable here.)
set -euo pipefail

log() { printf 'install-container-engine: %s\n' "$*" >&2; }

packages=(podman runc slirp4netns uidmap fuse-overlayfs)
missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Output only when a step fails (debconf and dpkg chatter on stderr otherwise).
  if ! out=$(apt-get update -qq 2>&1 && apt-get install -y -qq --no-install-recommends "${missing[@]}" 2>&1); then
    printf '%s\n' "$out" >&2
    exit 1
  fi
fi

# Written whole (not merged) so that a rerun converges on the same file. The ulimits are below
# the machine's own hard limits (podman's default asks for more and runc then fails); runc,
# because Debian 12's crun is not installed with podman here; slirp4netns, because it needs
# no bridge or iptables on the host and forwards published ports from the host's loopback.
conf=/etc/containers/containers.conf
want=$(
  cat <<'EOF'
# Written by scripts/install-container-engine.sh (Sluice's Testcontainers tests).
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
netns = "slirp4netns"

[engine]
runtime = "runc"

[network]
default_rootless_network_cmd = "slirp4netns"
EOF
)
if [[ ! -f "$conf" ]] || [[ "$(cat "$conf")" != "$want" ]]; then
  mkdir -p "$(dirname "$conf")"
  printf '%s\n' "$want" >"$conf"
fi

# Fails loudly here rather than in the middle of a test run.
if ! out=$(podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}' 2>&1); then
  log "podman does not work: $out"
  exit 1
fi
