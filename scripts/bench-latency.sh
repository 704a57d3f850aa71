#!/usr/bin/env bash
# bench-latency.sh: the replication latency benchmark (TestMirrorLatency) on Kafka
# 2.3.0 -> 3.7.1 (one broker each, JVM processes). It measures the bare franz-go loop's steady
# throughput first, then for kmirror, MirrorMaker 2 3.7.1 defaults and tuned in turn: records
# at half that rate, each stamped with its send time (header x-source-timestamp, Unix ms), and
# a read_committed consumer on the target (a kmirror record arrives once its transaction
# committed) that takes arrival minus send time; then the same at a fifth of that rate for
# half as long. Prints p50, p99 and max per contender, kmirror's own
# kmirror_replication_latency_seconds p99 over the same records, the source's own send-to-ack
# time and, per record, arrival minus the source's ack (the mirror's share), and the ratios
# against the goals; writes the Markdown to reports/bench-latency.md.
#
#   scripts/bench-latency.sh        # 30 s at half the bare loop, 15 s at a tenth, per contender
#   KMIGRATE_BENCH_LATENCY_SECONDS=10 KMIGRATE_BENCH_RECORDS=200000 scripts/bench-latency.sh
#
# Environment: KMIGRATE_BENCH_LATENCY_SECONDS (30), KMIGRATE_BENCH_RATE (records/s; skips the
# calibration), KMIGRATE_BENCH_RECORDS (records of the calibration, 1000000), and the shape
# knobs of scripts/bench-mirror.sh (value size, partitions, compression), KMIGRATE_BENCH_SKIP_MM2,
# KMIGRATE_BENCH_OUT. Needs Java 17 and the Kafka jars. Exit status is go test's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p reports
export KMIGRATE_BENCH=1
export KMIGRATE_BENCH_OUT=${KMIGRATE_BENCH_OUT:-$root/reports/bench-latency.md}
go test ./integration/ -run '^TestMirrorLatency$' -count=1 -v -timeout 60m
cat "$KMIGRATE_BENCH_OUT"
