#!/usr/bin/env bash
# bench-mirror-fence.sh: the smaller mirror benchmark (TestMirrorBench): kmirror fenced
# (the default) and without the fence, MirrorMaker 2 3.7.1 (default and tuned settings) and a
# bare franz-go consume-to-produce loop, on Kafka 2.3.0 -> 3.7.1 (one broker each, JVM
# processes started by integration/cluster), 200-byte values in 6 partitions. Prints a Markdown
# table (wall time, throughput, peak RSS) and the throughput ratios, and writes it to
# reports/bench-mirror-fence.md. The production shape is scripts/bench-mirror.sh.
#
#   scripts/bench-mirror-fence.sh                                   # 500000 records
#   KMIGRATE_BENCH_RECORDS=1000000 scripts/bench-mirror-fence.sh
#
# Needs Java 17 and the Kafka jars (scripts/fetch-kafka.sh). Exit status is go test's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p reports
export KMIGRATE_BENCH=1
export KMIGRATE_BENCH_OUT=${KMIGRATE_BENCH_OUT:-$root/reports/bench-mirror-fence.md}
go test ./integration/ -run '^TestMirrorBench$' -count=1 -v -timeout 60m
echo "bench-mirror-fence.sh: results in $KMIGRATE_BENCH_OUT"
