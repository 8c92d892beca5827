#!/usr/bin/env bash
# Apache Kafka as a 3-node reference cluster: the nodes of scripts/cluster/node-{1,2,3}.properties
# (combined mode, broker and controller each) with their ports moved to free loopback ports and
# their log dirs to a temporary dir, each dir formatted with one cluster id by Kafka's
# StorageTool, run from the jars that scripts/install-test-clients.sh cached. The same files
# start a Sluice cluster (`sluice start --config scripts/cluster/node-N.properties`), so a
# cluster scenario can be checked against Kafka's behaviour.
#
#   scripts/kafka-cluster.sh start   prints the bootstrap list (host:port,host:port,host:port)
#                                    once every node has started; diagnostics go to stderr
#   scripts/kafka-cluster.sh stop    stops the nodes (SIGTERM, then SIGKILL after 30 s), removes data
#   scripts/kafka-cluster.sh status  prints the bootstrap list, exit 1 unless every node runs
#   scripts/kafka-cluster.sh start-node N
#                                    starts node N again (after it was killed: its pid is in
#                                    the state dir's pid-N) from the same properties and data
#
# KAFKA_CLUSTER_STATE names the directory that remembers the running cluster (default
# .cache/kafka-cluster); each node's properties and server.log are in the data dir it records.
# KAFKA_CLUSTER_OVERRIDES, key=value lines (or space-separated), are appended to every node's
# properties at start (a later key wins in java.util.Properties), e.g.
# KAFKA_CLUSTER_OVERRIDES='broker.session.timeout.ms=3000 broker.heartbeat.interval.ms=500'.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$root/scripts/reference/pom.xml")
libs="$root/.cache/kafka-$kafka_version/libs"
state=${KAFKA_CLUSTER_STATE:-$root/.cache/kafka-cluster}
start_timeout_s=${KAFKA_CLUSTER_START_TIMEOUT_S:-180}
nodes=(1 2 3)

log() { printf 'kafka-cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

node_running() { [[ -f "$state/pid-$1" ]] && kill -0 "$(cat "$state/pid-$1")" 2>/dev/null; }

all_running() {
  local i
  for i in "${nodes[@]}"; do node_running "$i" || return 1; done
}

# Distinct free loopback ports, all held open together so that none is handed out twice.
free_ports() {
  node -e '
    const net = require("net");
    const n = Number(process.argv[1]);
    const servers = [];
    const next = () => {
      if (servers.length === n) {
        console.log(servers.map((s) => s.address().port).join(" "));
        for (const s of servers) s.close();
        return;
      }
      const s = net.createServer().listen(0, "127.0.0.1", next);
      servers.push(s);
    };
    next();' "$1"
}

now_ms() { date +%s%3N; }

java_opts() {
  # Three JVMs share the machine: a small heap each (Kafka's start script defaults to 1 GiB).
  echo -Xms128m -Xmx384m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
}

start() {
  [[ -f "$libs/.complete" ]] || die "Kafka $kafka_version is not installed: run scripts/install-test-clients.sh"
  if all_running; then
    log "already running"
    cat "$state/bootstrap"
    return
  fi
  [[ -d "$state" ]] && stop
  mkdir -p "$state"
  local t0 data ports cluster_id i
  t0=$(now_ms)
  data=$(mktemp -d "${TMPDIR:-/tmp}/kafka-cluster.XXXXXX")
  echo "$data" >"$state/data-dir"
  read -r -a ports <<<"$(free_ports 6)"
  # The example files' ports (9092..9094 for clients, 19092..19094 for the controllers),
  # each mapped to a free one; ':' in front keeps 9092 from matching inside 19092.
  local sed_ports=()
  for i in "${nodes[@]}"; do
    sed_ports+=(-e "s/:$((9091 + i))\b/:${ports[i - 1]}/g" -e "s/:$((19091 + i))\b/:${ports[i + 2]}/g")
  done
  cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  while [[ "$cluster_id" == -* ]]; do cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '='); done
  local bootstrap=()
  for i in "${nodes[@]}"; do
    mkdir -p "$data/node-$i"
    sed "${sed_ports[@]}" -e "s|^log.dirs=.*|log.dirs=$data/node-$i/logs|" \
      "$root/scripts/cluster/node-$i.properties" >"$data/node-$i/server.properties"
    if [[ -n "${KAFKA_CLUSTER_OVERRIDES:-}" ]]; then
      printf '\n# KAFKA_CLUSTER_OVERRIDES\n' >>"$data/node-$i/server.properties"
      tr ' ' '\n' <<<"$KAFKA_CLUSTER_OVERRIDES" | sed '/^$/d' >>"$data/node-$i/server.properties"
    fi
    bootstrap+=("127.0.0.1:${ports[i - 1]}")
  done
  (IFS=,; echo "${bootstrap[*]}") >"$state/bootstrap"

  local format_pids=()
  for i in "${nodes[@]}"; do
    # shellcheck disable=SC2046
    java $(java_opts) -Dlog4j2.configurationFile="$root/scripts/reference/log4j2.properties" -cp "$libs/*" \
      kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$data/node-$i/server.properties" \
      >"$data/node-$i/format.log" 2>&1 &
    format_pids+=($!)
  done
  for i in "${nodes[@]}"; do
    wait "${format_pids[i - 1]}" || { cat "$data/node-$i/format.log" >&2; stop; die "storage format of node $i failed"; }
  done
  local t1
  t1=$(now_ms)

  # Together: a node's broker starts only once the quorum (a majority of the voters) has a leader.
  for i in "${nodes[@]}"; do launch_node "$data" "$i"; done

  local deadline=$((SECONDS + start_timeout_s)) pending
  for (( ; ; )); do
    pending=0
    for i in "${nodes[@]}"; do
      if ! node_running "$i"; then
        tail -n 40 "$data/node-$i/console.log" "$data/node-$i/server.log" >&2 || true
        stop
        die "node $i exited while starting"
      fi
      grep -q 'Kafka Server started' "$data/node-$i/server.log" 2>/dev/null &&
        (exec 3<>"/dev/tcp/127.0.0.1/${ports[i - 1]}") 2>/dev/null || pending=$((pending + 1))
    done
    ((pending == 0)) && break
    if ((SECONDS > deadline)); then
      for i in "${nodes[@]}"; do tail -n 20 "$data/node-$i/server.log" >&2 || true; done
      stop
      die "the cluster did not start within $start_timeout_s s"
    fi
    sleep 0.5
  done
  local t2
  t2=$(now_ms)
  log "Kafka $kafka_version cluster $cluster_id up at $(cat "$state/bootstrap") (data in $data): format $((t1 - t0)) ms, start $((t2 - t1)) ms"
  cat "$state/bootstrap"
}

launch_node() {
  local data=$1 i=$2
  # shellcheck disable=SC2046
  nohup java $(java_opts) -Dlog4j2.configurationFile="$root/scripts/reference/log4j2-broker.properties" \
    -Dkafka.log.file="$data/node-$i/server.log" -cp "$libs/*" \
    kafka.Kafka "$data/node-$i/server.properties" >"$data/node-$i/console.log" 2>&1 </dev/null &
  echo $! >"$state/pid-$i"
}

# Node N again, from the same properties and data, once it has stopped; returns when it has
# started (its client port answers).
start_node() {
  local i=$1 data port deadline
  [[ "$i" =~ ^[123]$ ]] || die "start-node: no node '$i'"
  [[ -f "$state/data-dir" ]] || die "start-node: no cluster is running"
  node_running "$i" && die "start-node: node $i is running"
  data=$(cat "$state/data-dir")
  port=$(cut -d, -f"$i" "$state/bootstrap" | cut -d: -f2)
  # The previous incarnation's log already says it started.
  [[ -f "$data/node-$i/server.log" ]] && mv "$data/node-$i/server.log" "$data/node-$i/server.log.$(now_ms)"
  launch_node "$data" "$i"
  deadline=$((SECONDS + start_timeout_s))
  until grep -q 'Kafka Server started' "$data/node-$i/server.log" 2>/dev/null &&
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    node_running "$i" || { tail -n 40 "$data/node-$i/console.log" "$data/node-$i/server.log" >&2 || true; die "node $i exited while starting"; }
    ((SECONDS > deadline)) && die "node $i did not start within $start_timeout_s s"
    sleep 0.2
  done
  log "node $i started again"
}

stop() {
  local i pid pids=()
  for i in "${nodes[@]}"; do
    if node_running "$i"; then
      pid=$(cat "$state/pid-$i")
      kill -TERM "$pid"
      pids+=("$pid")
    fi
  done
  local deadline=$((SECONDS + 30))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid still running after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [[ -f "$state/data-dir" ]]; then
    rm -rf "$(cat "$state/data-dir")"
  fi
  rm -rf "$state"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) all_running && cat "$state/bootstrap" ;;
  start-node) start_node "${2:-}" ;;
  *) die "usage: $0 start|stop|status|start-node N" ;;
esac
