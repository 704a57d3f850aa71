#!/usr/bin/env bash
# bench-verify.sh: kverify diff against two plain franz-go consumers reading the same
# partitions in the same run, on one real Kafka 3.7.1 broker (two topics, "source" and
# "target", 1M records each by default), and kverify digest against one plain consumer when
# this kverify has the digest command. Prints the throughput ratios and peak memory (each
# contender's own VmHWM, sampled by internal/peakrss) as a Markdown section for docs/benchmarks.md.
# With KMIGRATE_BENCH_ALL_TOPICS set it then runs the --all benchmark (TestBenchVerifyAll):
# kverify diff --all over that many one-partition topics against one topic of as many
# partitions and against two plain consumers.
#
#   scripts/bench-verify.sh                 # starts a 3.7.1 broker, runs, stops it
#   KMIGRATE_BENCH_BROKERS=host:9092 scripts/bench-verify.sh   # use a running broker
#   # at scale: 10M records of 1 KiB, lz4, then --all over 200 topics of 50k records
#   KMIGRATE_BENCH_RECORDS=10000000 KMIGRATE_BENCH_VALUE=1024 KMIGRATE_BENCH_COMPRESSION=lz4 \
#     KMIGRATE_BENCH_ROUNDS=1 KMIGRATE_BENCH_FAULTS=0 KMIGRATE_BENCH_ALL_TOPICS=200 scripts/bench-verify.sh
#
# Environment (see verify/bench_test.go and verify/bench_all_test.go): KMIGRATE_BENCH_RECORDS
# (default 1000000), KMIGRATE_BENCH_VALUE (100), KMIGRATE_BENCH_COMPRESSION (snappy),
# KMIGRATE_BENCH_PARTITIONS (1), KMIGRATE_BENCH_ROUNDS (3), KMIGRATE_BENCH_FAULTS (1),
# KMIGRATE_BENCH_ALL_TOPICS (unset: no --all run), KMIGRATE_BENCH_ALL_RECORDS (50000),
# KMIGRATE_BENCH_ALL_VALUE (1024), KMIGRATE_BENCH_ALL_ROUNDS (2), KMIGRATE_BENCH_OUT (default
# reports/bench-verify.md; the --all result goes next to it as bench-verify-all.md).
# Exit 0 when the goals hold (kverify diff >= 1.0x the plain consumers, peak
# RSS < 256 MiB), 1 when not, 2 when the broker cannot be started.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${KMIGRATE_BENCH_OUT:-$root/reports/bench-verify.md}
mkdir -p "$(dirname "$out")"

if [ -z "${KMIGRATE_BENCH_BROKERS:-}" ]; then
  export KMIGRATE_RUNDIR=${KMIGRATE_BENCH_RUNDIR:-${TMPDIR:-/tmp}/kmigrate-bench-verify}
  scripts/cluster.sh up 3.7.1 || { echo "bench-verify.sh: could not start a Kafka 3.7.1 broker" >&2; exit 2; }
  trap 'scripts/cluster.sh down' EXIT # down also deletes the broker's data (tens of GiB at scale)
  # shellcheck disable=SC1091
  source "$KMIGRATE_RUNDIR/env"
  export KMIGRATE_BENCH_BROKERS=$KMIGRATE_BOOTSTRAP_3_7_1
fi

export KMIGRATE_BENCH_OUT=$out
export KMIGRATE_BENCH_ALL_OUT=${out%.md}-all.md
set +e
go test ./verify -run '^TestBenchVerify$' -count=1 -v -timeout 4h
rc=$?
if [ -n "${KMIGRATE_BENCH_ALL_TOPICS:-}" ]; then
  go test ./verify -run '^TestBenchVerifyAll$' -count=1 -v -timeout 3h || rc=1
fi
set -e
[ -f "$out" ] && cat "$out"
[ -n "${KMIGRATE_BENCH_ALL_TOPICS:-}" ] && [ -f "$KMIGRATE_BENCH_ALL_OUT" ] && cat "$KMIGRATE_BENCH_ALL_OUT"
[ $rc -eq 0 ] || exit 1
