#!/usr/bin/env bash
# bench-mirror.sh: kmirror against MirrorMaker 2 3.7.1 (default and tuned settings) and a bare
# franz-go consume-to-produce loop, on the same real brokers (Kafka 2.3.0 source, 3.7.1 target,
# one broker each, started as JVM processes by integration/cluster) and the same data, one
# contender after the other. Prints a Markdown table (wall time, throughput, peak RSS) and the
# throughput ratios, and writes it to reports/bench-mirror.md.
#
#   scripts/bench-mirror.sh                                   # 500000 records
#   KMIGRATE_BENCH_RECORDS=1000000 scripts/bench-mirror.sh
#
# Needs Java 17 and the Kafka jars (scripts/fetch-kafka.sh). Exit status is go test's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p reports
export KMIGRATE_BENCH=1
export KMIGRATE_BENCH_OUT=${KMIGRATE_BENCH_OUT:-$root/reports/bench-mirror.md}
go test ./integration/ -run '^TestMirrorBench$' -count=1 -v -timeout 60m
echo "bench-mirror.sh: results in $KMIGRATE_BENCH_OUT"
