#!/usr/bin/env bash
# Apache Kafka as a reference broker: one KRaft node (broker and controller in one process) on
# free loopback ports with a temporary data dir, run from the jars that
# scripts/install-test-clients.sh cached. compat/ runs every scenario against it so that each
# expectation is Kafka's behaviour.
#
#   scripts/kafka-reference.sh start   prints the bootstrap address (host:port) once the broker
#                                      answers; timings and diagnostics go to stderr
#   scripts/kafka-reference.sh stop    stops it (SIGTERM, then SIGKILL after 30 s), removes data
#   scripts/kafka-reference.sh status  prints the bootstrap address, exit 1 if not running
#
# KAFKA_REFERENCE_STATE names the directory that remembers the running broker (default
# .cache/kafka-reference), so that several can run side by side.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$root/scripts/reference/pom.xml")
libs="$root/.cache/kafka-$kafka_version/libs"
state=${KAFKA_REFERENCE_STATE:-$root/.cache/kafka-reference}
start_timeout_s=${KAFKA_REFERENCE_START_TIMEOUT_S:-120}

log() { printf 'kafka-reference: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

running() { [[ -f "$state/pid" ]] && kill -0 "$(cat "$state/pid")" 2>/dev/null; }

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

now_ms() { date +%s%3N; }

start() {
  [[ -f "$libs/.complete" ]] || die "Kafka $kafka_version is not installed: run scripts/install-test-clients.sh"
  if running; then
    log "already running (pid $(cat "$state/pid"))"
    cat "$state/bootstrap"
    return
  fi
  rm -rf "$state"
  mkdir -p "$state"
  local t0 data port controller_port cluster_id
  t0=$(now_ms)
  data=$(mktemp -d "${TMPDIR:-/tmp}/kafka-reference.XXXXXX")
  port=$(free_port)
  controller_port=$(free_port)
  while [[ "$controller_port" == "$port" ]]; do controller_port=$(free_port); done
  echo "$data" >"$state/data-dir"

  {
    echo "process.roles=broker,controller"
    echo "node.id=1"
    echo "controller.quorum.voters=1@127.0.0.1:$controller_port"
    echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
    echo "controller.listener.names=CONTROLLER"
    echo "inter.broker.listener.name=PLAINTEXT"
    echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    echo "log.dirs=$data/logs"
    echo "share.coordinator.state.topic.replication.factor=1"
    echo "share.coordinator.state.topic.min.isr=1"
    grep -v '^[[:space:]]*\(#\|$\)' "$root/scripts/reference/broker-settings.properties"
  } >"$data/server.properties"

  # Kafka's own start script defaults to a 1 GiB heap; the machines here have 2 cores.
  local java_opts=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$root/scripts/reference/log4j2.properties")
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  java "${java_opts[@]}" -cp "$libs/*" kafka.tools.StorageTool format \
    --cluster-id="$cluster_id" -c "$data/server.properties" >"$data/format.log" 2>&1 ||
    { cat "$data/format.log" >&2; die "storage format failed"; }
  local t1
  t1=$(now_ms)

  java_opts[-1]="-Dlog4j2.configurationFile=$root/scripts/reference/log4j2-broker.properties"
  nohup java "${java_opts[@]}" -Dkafka.log.file="$data/server.log" -cp "$libs/*" \
    kafka.Kafka "$data/server.properties" >"$data/console.log" 2>&1 </dev/null &
  echo $! >"$state/pid"
  echo "127.0.0.1:$port" >"$state/bootstrap"

  local deadline=$((SECONDS + start_timeout_s))
  until grep -q 'Kafka Server started' "$data/server.log" 2>/dev/null &&
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! running; then
      tail -n 40 "$data/console.log" "$data/server.log" >&2 || true
      die "the broker exited while starting"
    fi
    if ((SECONDS > deadline)); then
      tail -n 40 "$data/server.log" >&2 || true
      stop
      die "the broker did not start within $start_timeout_s s"
    fi
    sleep 0.2
  done
  local t2
  t2=$(now_ms)
  log "Kafka $kafka_version up at 127.0.0.1:$port (pid $(cat "$state/pid")): format $((t1 - t0)) ms, start $((t2 - t1)) ms, total $((t2 - t0)) ms"
  echo "127.0.0.1:$port"
}

stop() {
  if [[ -f "$state/pid" ]]; then
    local pid
    pid=$(cat "$state/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      local deadline=$((SECONDS + 30))
      while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
      if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid still running after SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
  fi
  if [[ -f "$state/data-dir" ]]; then
    rm -rf "$(cat "$state/data-dir")"
  fi
  rm -rf "$state"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) running && cat "$state/bootstrap" ;;
  *) die "usage: $0 start|stop|status" ;;
esac
