#!/usr/bin/env bash
# Installs the test-only Kafka oracle used by test/integration/oracle: Apache Kafka's client library
# and its runtime needs, from Maven Central, into .cache/oracle (git-ignored).
#   lib/         kafka-clients 3.9 (every protocol version from v0), the modules holding the
#                internal record schemas, Jackson, the compression codecs
#   lib-newer/   kafka-clients 4.0, consulted only for the few versions 3.9 predates
#   lib-newest/  kafka-clients and kafka-metadata 4.4, for the metadata records of Kafka 4.4
#                (ClearElrRecord, newer broker registrations) that 4.0 predates
# Idempotent: a second run with the same inputs does nothing. Prints the cache dir last.
# The oracle program (test/integration/oracle/java) is compiled by the tests, cached by source hash.
set -euo pipefail

newer_kafka_clients="org.apache.kafka:kafka-clients:4.0.0:jar"
newest_kafka=("org.apache.kafka:kafka-clients:4.4.0:jar" "org.apache.kafka:kafka-metadata:4.4.0:jar")

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/test/integration/oracle/pom.xml"
cache="$root/.cache/oracle"
stamp="$cache/install.stamp"

for tool in java javac mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-oracle: '$tool' not found on PATH (needs a JDK 17+ and Maven)" >&2
    exit 1
  fi
done

inputs_hash="$(cat "$pom" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$inputs_hash" ]]; then
  echo "install-oracle: up to date"
  echo "$cache"
  exit 0
fi

rm -rf "$cache/lib" "$cache/lib-newer" "$cache/lib-newest" "$stamp"
mkdir -p "$cache/lib" "$cache/lib-newer" "$cache/lib-newest"
# Maven's console colouring leaks escape codes even in batch mode.
mvn_plain() { mvn --batch-mode --quiet -f "$pom" "$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g'; }
mvn_plain dependency:copy-dependencies -DoutputDirectory="$cache/lib" -DincludeScope=runtime
mvn_plain dependency:copy -Dartifact="$newer_kafka_clients" -DoutputDirectory="$cache/lib-newer"
for artifact in "${newest_kafka[@]}"; do
  mvn_plain dependency:copy -Dartifact="$artifact" -DoutputDirectory="$cache/lib-newest"
done

shopt -s nullglob
jars=("$cache"/lib/*.jar)
newer=("$cache"/lib-newer/*.jar)
newest=("$cache"/lib-newest/*.jar)
if ((${#jars[@]} == 0 || ${#newer[@]} == 0 || ${#newest[@]} != ${#newest_kafka[@]})); then
  echo "install-oracle: Maven copied no jars into $cache" >&2
  exit 1
fi
echo "$inputs_hash" > "$stamp"

echo "install-oracle: ${#jars[@]} jars in $cache/lib, ${#newer[@]} in $cache/lib-newer, ${#newest[@]} in $cache/lib-newest"
echo "$cache"
