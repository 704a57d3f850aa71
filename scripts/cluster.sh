#!/usr/bin/env bash
# cluster.sh: start real Kafka clusters by hand to try kmigrate's tools on them.
#
#   scripts/cluster.sh up [--brokers N] [--acls | --secure] [2.3.0|3.7.1|4.3.1|kfake ...]
#                                                                       (default: 2.3.0 3.7.1)
#   scripts/cluster.sh status
#   scripts/cluster.sh down
#
# up builds scripts/kcluster (the same provider code the tests use: integration/cluster) and
# runs it in the background; it starts each cluster (2.3.0 on ZooKeeper, 3.7.1 and 4.3.1 on
# KRaft, JVMs from the jars of scripts/fetch-kafka.sh, fetched on first use) and prints the
# bootstrap addresses. --acls turns the brokers' authorizer on (2.3.0: the ZooKeeper one, KRaft:
# StandardAuthorizer; PLAINTEXT clients are User:ANONYMOUS, a super user), for kreconcile acls.
# --secure is production-shaped: 2.3.0 SASL_PLAINTEXT with SCRAM-SHA-256, 3.7.1 and 4.3.1
# SASL_SSL with SCRAM-SHA-512 and a CA the bed generates (host names verified), the authorizer
# on and user admin the only super user; the env file then also names the admin's Kafka client
# properties (KMIGRATE_ADMIN_CONFIG_2_3_0, _3_7_1, _4_3_1: --command-config of Kafka's CLI
# tools) and an mm2.properties from the oldest version up to the newest, e.g. 2.3.0->3.7.1 or
# 2.3.0->4.3.1 (KMIGRATE_MM2_CONFIG, read by kmigrate's tools and MM2).
# --brokers 3 runs 3 brokers each: replication factor 3, min.insync.replicas=2.
# down stops exactly what up started: the kcluster process recorded in the run dir and the JVM
# pids it recorded, nothing found by name.
#
# Needs Go, Java 17 (and Maven on the first run). State, data and logs live in
# $KMIGRATE_RUNDIR (default /tmp/kmigrate-clusters); `source $KMIGRATE_RUNDIR/env` sets
# KMIGRATE_BOOTSTRAP_2_3_0, KMIGRATE_BOOTSTRAP_4_3_1 and the like. Exit codes: 0 ok, 1 failed,
# 2 bad usage.
#
# Example: try the seed case by hand
#   scripts/cluster.sh up 2.3.0 3.7.1 && source /tmp/kmigrate-clusters/env
#   kverify diff --source-brokers "$KMIGRATE_BOOTSTRAP_2_3_0" --target-brokers "$KMIGRATE_BOOTSTRAP_3_7_1" ...
#   scripts/cluster.sh down
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rundir=${KMIGRATE_RUNDIR:-${TMPDIR:-/tmp}/kmigrate-clusters}
sup_pid_file=$rundir/kcluster.pid

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "cluster.sh: $*" >&2; exit 1; }

# supervisor_pid prints the recorded kcluster pid if that process is still our kcluster.
supervisor_pid() {
  [ -f "$sup_pid_file" ] || return 1
  local pid; pid=$(cat "$sup_pid_file")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "kcluster -dir $rundir" || return 1
  echo "$pid"
}

print_clusters() {
  local name version brokers boot dir pids
  while read -r name version brokers boot dir pids; do
    printf '%-12s %-6s brokers=%s bootstrap=%s\n             logs: %s\n' "$name" "$version" "$brokers" "$boot" "$dir"
  done <"$rundir/clusters"
}

cmd_up() {
  local brokers=1 acls=() versions=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --brokers) brokers=${2:?--brokers needs a number}; shift 2 ;;
      --brokers=*) brokers=${1#*=}; shift ;;
      --acls) acls+=(-acls); shift ;;
      --secure) acls+=(-secure); shift ;;
      2.3.0|3.7.1|4.3.1|kfake) versions+=("$1"); shift ;;
      -h|--help) usage ;;
      *) echo "cluster.sh: unknown version or flag $1 (want 2.3.0, 3.7.1, 4.3.1 or kfake)" >&2; exit 2 ;;
    esac
  done
  [ ${#versions[@]} -gt 0 ] || versions=(2.3.0 3.7.1)
  case "$brokers" in 1|3) ;; *) echo "cluster.sh: --brokers $brokers: want 1 or 3" >&2; exit 2 ;; esac
  if [ ${#acls[@]} -gt 1 ]; then
    echo "cluster.sh: --acls and --secure: give one (--secure turns the authorizer on, admin the only super user)" >&2; exit 2
  fi
  if pid=$(supervisor_pid); then
    die "clusters already up (kcluster pid $pid, run dir $rundir): run '$0 down' first"
  fi
  # A run dir left by a crashed supervisor: its JVMs died with it; clear the data.
  rm -rf "$rundir"
  mkdir -p "$rundir"
  (cd "$root" && go build -o "$rundir/kcluster" ./scripts/kcluster) || die "go build ./scripts/kcluster failed"
  echo "cluster.sh: starting ${versions[*]} (brokers=$brokers) in $rundir"
  # Three brokers per cluster on two cores take longer: a later deadline.
  local wait_s=330
  [ "$brokers" = 1 ] || wait_s=600
  setsid "$rundir/kcluster" -dir "$rundir" -brokers "$brokers" -timeout "$(( wait_s - 30 ))s" "${acls[@]}" "${versions[@]}" \
    >"$rundir/kcluster.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$sup_pid_file"
  local deadline=$(( $(date +%s) + wait_s ))
  while [ ! -f "$rundir/ready" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$rundir/kcluster.log" >&2
      rm -f "$sup_pid_file"
      die "kcluster exited before the clusters were ready (log above, data in $rundir)"
    fi
    if [ "$(date +%s)" -gt "$deadline" ]; then
      kill -TERM "$pid" 2>/dev/null || true
      die "clusters not ready after $wait_s s; see $rundir/kcluster.log"
    fi
    sleep 0.5
  done
  : >"$rundir/env"
  local name version brokers_ boot dir pids
  while read -r name version brokers_ boot dir pids; do
    echo "export KMIGRATE_BOOTSTRAP_${version//./_}=$boot" >>"$rundir/env"
  done <"$rundir/clusters"
  [ ! -f "$rundir/env-secure" ] || cat "$rundir/env-secure" >>"$rundir/env"
  print_clusters
  local what="KMIGRATE_BOOTSTRAP_*"
  [ ! -f "$rundir/env-secure" ] || what="KMIGRATE_BOOTSTRAP_*, KMIGRATE_ADMIN_CONFIG_* and KMIGRATE_MM2_CONFIG"
  echo "cluster.sh: up (kcluster pid $pid); 'source $rundir/env' for $what; '$0 down' stops them"
}

cmd_status() {
  local pid
  if ! pid=$(supervisor_pid); then
    echo "cluster.sh: no clusters up (run dir $rundir)"
    return 1
  fi
  [ -f "$rundir/clusters" ] || { echo "cluster.sh: kcluster pid $pid is starting the clusters (log $rundir/kcluster.log)"; return 0; }
  echo "cluster.sh: up, kcluster pid $pid, run dir $rundir"
  print_clusters
  local name version brokers boot dir pids addr
  while read -r name version brokers boot dir pids; do
    for addr in ${boot//,/ }; do
      if (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null; then
        echo "  $name $addr: listening"
      else
        echo "  $name $addr: not listening"
      fi
    done
  done <"$rundir/clusters"
}

cmd_down() {
  local pid jvms=()
  if [ -f "$rundir/clusters" ]; then
    local name version brokers boot dir pids
    while read -r name version brokers boot dir pids; do
      [ "$pids" = "-" ] || jvms+=(${pids//,/ })
    done <"$rundir/clusters"
  fi
  if pid=$(supervisor_pid); then
    kill -TERM "$pid"
    local deadline=$(( $(date +%s) + 60 ))
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -le "$deadline" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster.sh: kcluster pid $pid ignored SIGTERM for 60 s, killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  else
    echo "cluster.sh: no running kcluster recorded in $rundir"
  fi
  # The JVMs die with kcluster; make sure of each recorded one (pid and our run dir in its
  # command line, so a reused pid is never touched).
  local j left=()
  for j in "${jvms[@]}"; do
    for _ in $(seq 1 50); do
      [ -r "/proc/$j/cmdline" ] && tr '\0' ' ' <"/proc/$j/cmdline" | grep -q -- "$rundir" || break
      sleep 0.2
    done
    if [ -r "/proc/$j/cmdline" ] && tr '\0' ' ' <"/proc/$j/cmdline" | grep -q -- "$rundir"; then
      kill -KILL "$j" 2>/dev/null || true
      left+=("$j")
    fi
  done
  [ ${#left[@]} -eq 0 ] || echo "cluster.sh: killed leftover JVMs ${left[*]}" >&2
  rm -f "$sup_pid_file" "$rundir/env" "$rundir/env-secure" "$rundir"/admin-*.properties "$rundir/mm2.properties"
  find "$rundir" -mindepth 1 -maxdepth 1 -type d -name 'kafka-*' -exec rm -rf {} +
  echo "cluster.sh: down (${#jvms[@]} JVMs stopped; kcluster log kept in $rundir/kcluster.log)"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  status) cmd_status ;;
  down) cmd_down ;;
  -h|--help|help|"") usage ;;
  *) echo "cluster.sh: unknown command $1 (want up, status or down)" >&2; exit 2 ;;
esac
