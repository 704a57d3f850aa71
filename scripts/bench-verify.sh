#!/usr/bin/env bash
# bench-verify.sh: kverify diff against two plain franz-go consumers reading the same two
# partitions in the same run, on one real Kafka 3.7.1 broker (two topics, "source" and
# "target", 1M records each by default). Prints the throughput ratio and peak memory
# (each contender's own VmHWM, sampled by internal/peakrss) as a Markdown section for BENCHMARKS.md.
#
#   scripts/bench-verify.sh                 # starts a 3.7.1 broker, runs, stops it
#   KMIGRATE_BENCH_BROKERS=host:9092 scripts/bench-verify.sh   # use a running broker
#
# Environment: KMIGRATE_BENCH_RECORDS (default 1000000), KMIGRATE_BENCH_ROUNDS (default 3),
# KMIGRATE_BENCH_OUT (default reports/bench-verify.md). Exit 0 when the goals hold (ratio
# >= 0.8, peak RSS < 256 MiB), 1 when not, 2 when the broker cannot be started.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${KMIGRATE_BENCH_OUT:-$root/reports/bench-verify.md}
mkdir -p "$(dirname "$out")"

started=
if [ -z "${KMIGRATE_BENCH_BROKERS:-}" ]; then
  export KMIGRATE_RUNDIR=${KMIGRATE_BENCH_RUNDIR:-${TMPDIR:-/tmp}/kmigrate-bench-verify}
  scripts/cluster.sh up 3.7.1 || { echo "bench-verify.sh: could not start a Kafka 3.7.1 broker" >&2; exit 2; }
  started=1
  trap 'scripts/cluster.sh down' EXIT
  # shellcheck disable=SC1091
  source "$KMIGRATE_RUNDIR/env"
  export KMIGRATE_BENCH_BROKERS=$KMIGRATE_BOOTSTRAP_3_7_1
fi

export KMIGRATE_BENCH_OUT=$out
set +e
go test ./verify -run '^TestBenchVerify$' -count=1 -v -timeout 40m
rc=$?
set -e
[ -f "$out" ] && cat "$out"
[ $rc -eq 0 ] || exit 1
