#!/usr/bin/env bash
# Builds Sluice's container image, localhost/sluice:8.0.0, with no registry: the root
# filesystem is assembled here from the package as npm ships it (`npm pack`, installed with
# its production dependencies only), the host's Node binary, bash, env and sleep, and the
# shared libraries ldd lists for them and for the native addons; then `podman import`ed
# (`docker import` where there is no podman, or SLUICE_CONTAINER_ENGINE=docker).
#
#   bash scripts/container/build-image.sh [--tarball sluice-x.y.z.tgz] [--force]
#
# Prints the image name on stdout. An image built from the same tarball (and the same
# version of this script, its run script and Node) is kept: the inputs' hash is the image's
# org.sluice.build-key label. --tarball uses a package packed already; --force rebuilds.
#
# The image follows Confluent's cp-kafka layout where Testcontainers and compose files rely
# on it: CMD /etc/confluent/docker/run (scripts/container/run), configured from KAFKA_*
# environment variables, data in /var/lib/kafka/data.
#
# Why the tag is 8.0.0: @testcontainers/kafka's KafkaContainer reads the image tag as a
# Confluent Platform version and configures KRaft (no ZooKeeper: process.roles, a controller
# listener, controller.quorum.voters) only for tags >= 8.0.0 (`satisfies(tag, ">=8.0.0")`
# in its constructor; below that it starts an embedded ZooKeeper). Sluice is KRaft only.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
image=${SLUICE_IMAGE:-localhost/sluice:8.0.0}
tarball=""
force=0
while (($#)); do
  case $1 in
    --tarball)
      tarball=$(realpath "$2")
      shift 2
      ;;
    --force)
      force=1
      shift
      ;;
    *)
      echo "usage: $0 [--tarball sluice-x.y.z.tgz] [--force]" >&2
      exit 2
      ;;
  esac
done

log() { printf 'build-image: %s\n' "$*" >&2; }
# podman (scripts/install-container-engine.sh); docker's CLI takes the same commands here.
engine=${SLUICE_CONTAINER_ENGINE:-$(if command -v podman >/dev/null; then echo podman; else echo docker; fi)}
command -v "$engine" >/dev/null || {
  log "neither podman nor docker is installed (bash scripts/install-container-engine.sh)"
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs a step with its output kept aside: shown only when the step fails.
quietly() {
  if ! "$@" >"$work/step.log" 2>&1; then
    cat "$work/step.log" >&2
    log "failed: $*"
    exit 1
  fi
}

if [[ -z $tarball ]]; then
  # `npm pack` runs the package's prepare script (the build) first.
  quietly bash -c 'cd "$1" && npm pack --json --pack-destination "$2" >"$2/pack.json"' _ "$root" "$work"
  tarball="$work/$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].filename)' "$work/pack.json")"
fi

key=$({
  sha256sum "$tarball" "$here/build-image.sh" "$here/run" | cut -d' ' -f1
  node --version
} | sha256sum | cut -c1-32)
if ((!force)) && [[ "$("$engine" image inspect --format '{{index .Labels "org.sluice.build-key"}}' "$image" 2>/dev/null)" == "$key" ]]; then
  log "$image is up to date ($(basename "$tarball"))"
  echo "$image"
  exit 0
fi

rootfs="$work/rootfs"
mkdir -p "$rootfs"
# The host's merged-/usr links (Debian 12: /bin -> usr/bin, /lib -> usr/lib, ...), so that
# each file can be copied to the path it has on the host and ldd's paths hold in the image.
for dir in bin sbin lib lib64; do
  if [[ -L /$dir ]]; then
    mkdir -p "$rootfs/$(readlink "/$dir")"
    ln -s "$(readlink "/$dir")" "$rootfs/$dir"
  fi
done
mkdir -p "$rootfs"/{usr/bin,usr/lib,usr/local/bin,etc/confluent/docker,etc/kafka,var/lib/kafka/data,opt/sluice,root,tmp}
chmod 1777 "$rootfs/tmp"

# Copies a file to the same path in the image, its symlinks resolved.
copy() {
  [[ -e "$rootfs$1" ]] && return 0
  mkdir -p "$(dirname "$rootfs$1")"
  cp -L "$1" "$rootfs$1"
}

# Copies every library ldd resolves for an executable or a shared object.
copy_libraries() {
  local file=$1 listing
  listing=$(ldd "$file" 2>&1 || true)
  if grep -q 'not found' <<<"$listing"; then
    log "$file needs a library the host lacks:"
    grep 'not found' <<<"$listing" >&2
    exit 1
  fi
  # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
  while read -r lib; do
    copy "$lib"
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$listing")
}

copy_with_libraries() {
  copy "$1"
  copy_libraries "$1"
}

node_bin=$(command -v node)
copy_with_libraries "$node_bin"
# bash: /etc/confluent/docker/run, Testcontainers' start script (#!/bin/bash) and its port
# check (`/bin/bash -c '</dev/tcp/localhost/9093'`); sh for KafkaContainer's entrypoint;
# env for bin/sluice.js's `#!/usr/bin/env -S node ...`; sleep for KafkaContainer's wait loop.
copy_with_libraries /bin/bash
ln -s bash "$rootfs/bin/sh"
copy_with_libraries /usr/bin/env
copy_with_libraries "$(command -v sleep)"

# The package and its production dependencies. The project file allows the install scripts
# the repository allows (zstd-napi builds its binding at install time).
node -e '
  const allowScripts = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).allowScripts ?? {};
  process.stdout.write(JSON.stringify({ name: "sluice-image", private: true, allowScripts }, null, 2) + "\n");
' "$root/package.json" >"$rootfs/opt/sluice/package.json"
quietly npm install --prefix "$rootfs/opt/sluice" --omit=dev --no-audit --no-fund --prefer-offline "$tarball"
# What only building the native addons needed: their C sources and object files.
rm -rf "$rootfs/opt/sluice/node_modules/zstd-napi/deps" "$rootfs/opt/sluice/node_modules/zstd-napi/src" \
  "$rootfs/opt/sluice/node_modules/zstd-napi/build/Release/obj.target"
while read -r addon; do
  copy_libraries "$addon"
done < <(find "$rootfs/opt/sluice/node_modules" -name '*.node' -type f)
ln -s /opt/sluice/node_modules/.bin/sluice "$rootfs/usr/local/bin/sluice"
"$rootfs$node_bin" --version >/dev/null

install -m 0755 "$here/run" "$rootfs/etc/confluent/docker/run"
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
# Without this file glibc asks DNS before /etc/hosts, and "localhost" (the controller voter
# KafkaContainer configures) may not resolve.
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"

version=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version)' \
  "$rootfs/opt/sluice/node_modules/sluice/package.json")
tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -cf "$work/rootfs.tar" .
# No EXPOSE (cp-kafka has EXPOSE 9092): podman 4.3's Docker API lists an exposed port that
# is not published in HostConfig.PortBindings with a null binding, and Testcontainers then
# waits for that port to be bound until it gives up ("Timed out ... waiting for container
# ports to be bound to the host"). Testcontainers publishes the ports it needs itself.
previous=$("$engine" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
quietly "$engine" import \
  --change 'CMD ["/etc/confluent/docker/run"]' \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'WORKDIR /' \
  --change "LABEL org.sluice.build-key=$key" \
  --change "LABEL org.opencontainers.image.version=$version" \
  --change 'LABEL org.opencontainers.image.title=sluice' \
  --message "sluice $version" \
  "$work/rootfs.tar" "$image"
# The image the tag moved from, unless a container still uses it.
if [[ -n $previous && $previous != "$("$engine" image inspect --format '{{.Id}}' "$image")" ]]; then
  "$engine" rmi "$previous" >/dev/null 2>&1 || true
fi
log "built $image (sluice $version, $(du -sh "$work/rootfs.tar" | cut -f1) uncompressed)"
echo "$image"
