#!/usr/bin/env bash
# Installs the third-party Kafka clients that compat/ drives, and Apache Kafka itself (broker,
# CLI tools, Java client) as the reference the compat scenarios are checked against.
# Idempotent: what is already installed or cached is left as it is. Runs as root on Debian 12.
#
#   apt:   kcat, confluent-kafka-python (librdkafka), kafka-python and the codec libraries
#          kafka-python loads for snappy/lz4/zstd. They install into Debian's /usr/bin/python3.
#          nftables (the nft command) for the packet filtering of the fault suite (test/cluster).
#          chromium, the headless browser the web console's tests drive (playwright-core).
#   npm:   a Node 22 binary (scripts/install-node22.sh), beside the machine's Node 20.
#   Maven: org.apache.kafka:kafka_2.13, kafka-tools and kafka-clients with their dependencies,
#          copied into .cache/kafka-<version>/libs (scripts/reference/pom.xml pins the version).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

started=$SECONDS
log() { printf 'install-test-clients: %s\n' "$*" >&2; }

apt_packages=(kcat python3-confluent-kafka python3-kafka python3-snappy python3-lz4 python3-zstandard nftables chromium)
# The JDK and Maven are there on the project's machines; install them where they are not.
command -v javac >/dev/null 2>&1 || apt_packages+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || apt_packages+=(maven)
# fusermount3, which mounts eiofs (the failing disk of the bad-disk tests).
command -v fusermount3 >/dev/null 2>&1 || apt_packages+=(fuse3)

missing=()
for pkg in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  log "apt packages already installed"
fi

kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/reference/pom.xml)
libs="$root/.cache/kafka-$kafka_version/libs"
if [[ -f "$libs/.complete" ]]; then
  log "Kafka $kafka_version jars already cached in ${libs#"$root"/}"
else
  log "resolving Kafka $kafka_version from Maven Central into ${libs#"$root"/}"
  rm -rf "$libs.partial"
  mkdir -p "$libs.partial"
  # Maven's own repository (~/.m2) stays as the download cache between runs.
  mvn -q -B -f scripts/reference/pom.xml dependency:copy-dependencies \
    -DoutputDirectory="$libs.partial" -DincludeScope=runtime
  rm -rf "$libs"
  mv "$libs.partial" "$libs"
  touch "$libs/.complete"
fi

if [[ -f scripts/install-oracle.sh ]]; then
  log "running scripts/install-oracle.sh"
  bash scripts/install-oracle.sh
fi

log "Node 22: $(bash scripts/install-node22.sh)"

# podman for the Testcontainers tests (test/integration/testcontainers) and the image build.
bash scripts/install-container-engine.sh

# eiofs, the FUSE file system that returns EIO on demand (test/integration/cluster/bad-disk.test.ts).
log "building eiofs"
bash scripts/faults/eiofs/build.sh

log "done in $((SECONDS - started)) s"
