#!/usr/bin/env bash
# bench-growth.sh: how the cost grows, one table per tool, each written to
# reports/bench-growth-<tool>.md and printed:
#   mirror     kmirror's peak RSS and throughput at 6, 100 and 1,000 partitions, the same
#              records per run, beside the bare franz-go loop (integration TestMirrorGrowth;
#              Kafka 2.3.0 -> 3.7.1 as JVM processes)
#   reconcile  kreconcile groups' plan time at 1,000 and 10,000 groups x 24 partitions with
#              MM2's offset syncs and MM2-format checkpoints (integration TestReconcileGrowth)
#   verify     kverify diff's peak RSS against --history and --window on a faulty copy
#              (integration TestVerifyGrowth; the kverify binary against an in-process kfake
#              broker, or a real one with KMIGRATE_GROWTH_VERIFY_VERSION=2.3.0 or 3.7.1)
#
#   scripts/bench-growth.sh                      # all three, full sizes (about 20 minutes)
#   scripts/bench-growth.sh verify reconcile     # some of them
#   KMIGRATE_GROWTH_QUICK=1 scripts/bench-growth.sh   # small sizes, a few minutes (make bench-quick)
#
# The mirror and reconcile parts start JVM brokers: on a shared machine run the script under
# `flock /tmp/kmigrate-jvm.lock`. Needs Java 17 and the Kafka jars (scripts/fetch-kafka.sh).
# The sizes can be set one by one (KMIGRATE_GROWTH_PARTITIONS, KMIGRATE_GROWTH_MIRROR_RECORDS,
# KMIGRATE_GROWTH_GROUPS, KMIGRATE_GROWTH_RECORDS, KMIGRATE_GROWTH_VERIFY_RECORDS,
# KMIGRATE_GROWTH_HISTORY, KMIGRATE_GROWTH_WINDOW; see the tests). Exit status is the first
# failing part's go test status.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Under scripts/bench.sh the tables go beside its other reports (reports/quick/ with --quick).
reports=$root/reports
[ -z "${KMIGRATE_BENCH_OUT:-}" ] || reports=$(dirname "$KMIGRATE_BENCH_OUT")
mkdir -p "$reports"
export KMIGRATE_BENCH=1
if [ "${KMIGRATE_GROWTH_QUICK:-}" = 1 ]; then
  : "${KMIGRATE_GROWTH_PARTITIONS:=6,100}" "${KMIGRATE_GROWTH_MIRROR_RECORDS:=20000}"
  : "${KMIGRATE_GROWTH_GROUPS:=100,1000}" "${KMIGRATE_GROWTH_RECORDS:=500}"
  : "${KMIGRATE_GROWTH_VERIFY_RECORDS:=100000}" "${KMIGRATE_GROWTH_HISTORY:=1000,10000,100000}" "${KMIGRATE_GROWTH_WINDOW:=100,1000,10000}"
  export KMIGRATE_GROWTH_PARTITIONS KMIGRATE_GROWTH_MIRROR_RECORDS KMIGRATE_GROWTH_GROUPS KMIGRATE_GROWTH_RECORDS \
    KMIGRATE_GROWTH_VERIFY_RECORDS KMIGRATE_GROWTH_HISTORY KMIGRATE_GROWTH_WINDOW
fi
which=("$@")
[ ${#which[@]} -gt 0 ] || which=(verify reconcile mirror)
rc=0
for part in "${which[@]}"; do
  out="$reports/bench-growth-$part.md"
  case "$part" in
    mirror) pkg=./integration/ test=TestMirrorGrowth ;;
    reconcile) pkg=./integration/ test=TestReconcileGrowth ;;
    verify) pkg=./integration/ test=TestVerifyGrowth ;;
    *) echo "bench-growth.sh: unknown part $part (mirror, reconcile, verify)" >&2; exit 2 ;;
  esac
  rm -f "$out"
  [ "$part" = verify ] || "$root/scripts/fetch-kafka.sh" >/dev/null
  set +e
  KMIGRATE_BENCH_OUT=$out KMIGRATE_REQUIRE_REAL=1 go test "$pkg" -run "^$test\$" -count=1 -v -timeout 90m
  status=$?
  set -e
  [ $status -eq 0 ] || { [ $rc -ne 0 ] || rc=$status; echo "bench-growth.sh: $part failed (go test exit $status)" >&2; }
  [ -f "$out" ] && { echo "== $part: $out"; cat "$out"; }
done
exit $rc
