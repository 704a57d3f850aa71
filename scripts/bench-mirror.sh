#!/usr/bin/env bash
# bench-mirror.sh: the production-shape mirror benchmark (TestMirrorBenchProd). One
# source topic on Kafka 2.3.0, copied to Kafka 3.7.1 (one broker each, JVM processes started by
# integration/cluster) by four contenders one after the other: a bare franz-go
# consume-to-produce loop, kmirror, MirrorMaker 2 3.7.1 with its defaults and tuned. Per
# contender: wall and steady throughput, CPU seconds per GiB mirrored (its own user+sys),
# peak RSS (its own VmHWM), and the ratios against kmirror's goals. Each copy is deleted once
# measured, the source at the end. Writes the Markdown to reports/bench-mirror.md.
#
#   scripts/bench-mirror.sh                           # 10M records of 1 KiB, lz4, 24 partitions
#   KMIGRATE_BENCH_RECORDS=200000 scripts/bench-mirror.sh   # the same, small (make bench-quick)
#
# Environment: KMIGRATE_BENCH_RECORDS (10000000), KMIGRATE_BENCH_VALUE (value bytes, 1024),
# KMIGRATE_BENCH_PARTITIONS (24), KMIGRATE_BENCH_COMPRESSION (lz4: the source producer's, and
# the target producer's of every contender but MirrorMaker 2 defaults), KMIGRATE_BENCH_SKIP_MM2=1
# (bare loop and kmirror only), KMIGRATE_BENCH_OUT. Disk: the source and one copy at a time,
# about 2 x records x value / 2 (lz4 stores the values about 2:1; MM2 defaults writes
# uncompressed). Needs Java 17 and the Kafka jars (scripts/fetch-kafka.sh). Exit status is go
# test's (the goals are reported, not asserted).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p reports
export KMIGRATE_BENCH=1
export KMIGRATE_BENCH_OUT=${KMIGRATE_BENCH_OUT:-$root/reports/bench-mirror.md}
go test ./integration/ -run '^TestMirrorBenchProd$' -count=1 -v -timeout 120m
cat "$KMIGRATE_BENCH_OUT"
