#!/usr/bin/env bash
# Installs the third-party Kafka clients that compat/ drives, and Apache Kafka itself (broker,
# CLI tools, Java client) as the reference the compat scenarios are checked against.
# Idempotent: what is already installed or cached is left as it is. Runs as root on Debian 12.
#
#   apt:   kcat, confluent-kafka-python (librdkafka), kafka-python and the codec libraries
#          kafka-python loads for snappy/lz4/zstd. They install into Debian's /usr/bin/python3.
#          nftables (the nft command) for the packet filtering of the fault suite (test/cluster).
#          chromium, the headless browser the web console's tests drive (playwright-core).
#   PyPI:  confluent-kafka, whose wheel bundles a librdkafka that can do SCRAM with Kafka 4, into
#          the virtualenv .cache/python-venv for the security tests (test/integration/security);
#          kcat runs on that librdkafka through .cache/kcat-librdkafka. compat/ keeps Debian's.
#   npm:   a Node 22 binary (scripts/install-node22.sh), beside the machine's Node 20.
#   Maven: org.apache.kafka:kafka_2.13, kafka-tools and kafka-clients with their dependencies,
#          copied into .cache/kafka-<version>/libs (scripts/reference/pom.xml pins the version).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

started=$SECONDS
log() { printf 'install-test-clients: %s\n' "$*" >&2; }

apt_packages=(kcat python3-confluent-kafka python3-kafka python3-snappy python3-lz4 python3-zstandard python3-venv nftables chromium)
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

# Debian's librdkafka (2.0.2) builds SCRAM proofs Kafka 4 refuses (confluentinc/librdkafka#4895,
# fixed in 2.6.1). The virtualenv sees Debian's site packages too (kafka-python, the codecs).
confluent_kafka_version=2.16.1
venv="$root/.cache/python-venv"
installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("confluent-kafka"))' 2>/dev/null || true)
if [[ "$installed" == "$confluent_kafka_version" ]]; then
  log "confluent-kafka $confluent_kafka_version already in ${venv#"$root"/}"
else
  log "installing confluent-kafka $confluent_kafka_version from PyPI into ${venv#"$root"/}"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "confluent-kafka==$confluent_kafka_version"
fi
librdkafka_version=$("$venv/bin/python" -c 'import confluent_kafka; print(confluent_kafka.libversion()[0])')

# Debian's kcat loads librdkafka.so.1 by that name: a directory holding it, linked to the wheel's
# copy (renamed by auditwheel), is what LD_LIBRARY_PATH gives kcat (test/integration/security/clients.ts).
bundled=("$venv"/lib/python3*/site-packages/confluent_kafka.libs/librdkafka-*.so.1)
if [[ ${#bundled[@]} -ne 1 || ! -f "${bundled[0]}" ]]; then
  log "expected one librdkafka in confluent_kafka.libs, found: ${bundled[*]}"
  exit 1
fi
kcat_librdkafka="$root/.cache/kcat-librdkafka"
mkdir -p "$kcat_librdkafka"
ln -sfn "../${bundled[0]#"$root/.cache/"}" "$kcat_librdkafka/librdkafka.so.1"
kcat_banner=$(LD_LIBRARY_PATH="$kcat_librdkafka" kcat -V 2>&1 || true)
if [[ "$kcat_banner" != *"librdkafka $librdkafka_version "* ]]; then
  log "kcat does not run on the bundled librdkafka $librdkafka_version: $kcat_banner"
  exit 1
fi
log "confluent-kafka and kcat run on librdkafka $librdkafka_version"

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
