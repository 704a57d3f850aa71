#!/usr/bin/env bash
# bench-startup.sh: kmirror's start-up on real brokers (Kafka 2.3.0 source, 3.7.1
# target, one broker each, JVM processes from integration/cluster): time from exec to the first
# record acknowledged by the target, for a fresh flow and for a resumed flow with 1,000
# partitions of map, median and max of several runs, with the phases of the median run.
# Prints a Markdown table and writes it to reports/bench-startup.md.
#
#   scripts/bench-startup.sh                                    # the current tree only
#   KMIGRATE_STARTUP_BASELINE=<git revision> scripts/bench-startup.sh   # before/after, same bed
#   KMIGRATE_STARTUP_RUNS=7 KMIGRATE_STARTUP_PARTITIONS=1000 KMIGRATE_STARTUP_FRESH_PARTITIONS=6
#
# Needs Java 17 and the Kafka jars (scripts/fetch-kafka.sh). Exit status is go test's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p reports
export KMIGRATE_BENCH=1
export KMIGRATE_BENCH_OUT=${KMIGRATE_BENCH_OUT:-$root/reports/bench-startup.md}
go test ./integration/ -run '^TestMirrorStartupBench$' -count=1 -v -timeout 60m
echo "bench-startup.sh: results in $KMIGRATE_BENCH_OUT"
