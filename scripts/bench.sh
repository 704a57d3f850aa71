#!/usr/bin/env bash
# bench.sh: every benchmark that compares kmigrate with a peer in the same run, on real brokers
# (JVM processes from the cached jars). Each writes a Markdown table under reports/ that
# docs/benchmarks.md quotes.
#
#   scripts/bench.sh                    # all of them at full size (make bench)
#   scripts/bench.sh --quick            # a small version of each, same code (make bench-quick)
#   scripts/bench.sh mirror latency     # some of them: verify, reconcile, mirror, latency,
#                                       # startup, growth, mirror-fence (--quick applies too)
#
# The default set is verify, reconcile, mirror (the production shape), latency,
# startup and growth (how each tool's cost grows: scripts/bench-growth.sh).
# mirror-fence (the smaller mirror benchmark) runs only when named. --quick
# results go to reports/quick/, so they do not overwrite the full ones. Every benchmark runs
# even when one fails; the exit status is 1 if any failed. Each one's time and the total are
# printed at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=0
which=()
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    verify|reconcile|mirror|latency|startup|growth|mirror-fence) which+=("$a") ;;
    *) echo "bench.sh: unknown benchmark $a (verify, reconcile, mirror, latency, startup, growth, mirror-fence; --quick)" >&2; exit 2 ;;
  esac
done
[ ${#which[@]} -gt 0 ] || which=(verify reconcile mirror latency startup growth)
"$root/scripts/fetch-kafka.sh" >/dev/null
reports=$root/reports
[ $quick -eq 0 ] || reports=$root/reports/quick
mkdir -p "$reports"

# run NAME SCRIPT [VAR=VALUE...]: the script with the variables set (quick sizes only with --quick).
run() {
  local name=$1 script=$2
  shift 2
  if [ ! -x "$script" ]; then
    echo "bench.sh: $name skipped: $script is not in this tree yet"
    summary+=("$name: skipped ($script missing)")
    return
  fi
  [ $quick -eq 1 ] || set --
  local t0=$SECONDS rc=0
  echo "=== bench.sh: $name ($script${*:+ with $*})"
  env KMIGRATE_BENCH_OUT="$reports/bench-$name.md" "$@" "$script" || rc=$?
  summary+=("$name: $((SECONDS - t0)) s, exit $rc")
  [ $rc -eq 0 ] || failed=1
}

summary=()
failed=0
start=$SECONDS
for b in "${which[@]}"; do
  case "$b" in
    verify) run verify scripts/bench-verify.sh KMIGRATE_BENCH_RECORDS=200000 KMIGRATE_BENCH_ROUNDS=1 ;;
    reconcile) run reconcile scripts/bench-reconcile.sh KMIGRATE_BENCH_GROUPS=50 ;;
    mirror) run mirror scripts/bench-mirror.sh KMIGRATE_BENCH_RECORDS=100000 ;;
    latency) run latency scripts/bench-latency.sh KMIGRATE_BENCH_RECORDS=200000 KMIGRATE_BENCH_LATENCY_SECONDS=6 KMIGRATE_BENCH_LATENCY_ONE_RATE=1 ;;
    startup) run startup scripts/bench-startup.sh KMIGRATE_STARTUP_RUNS=2 KMIGRATE_STARTUP_PARTITIONS=100 ;;
    growth) run growth scripts/bench-growth.sh KMIGRATE_GROWTH_QUICK=1 ;;
    mirror-fence) run mirror-fence scripts/bench-mirror-fence.sh KMIGRATE_BENCH_RECORDS=100000 ;;
  esac
done
echo "=== bench.sh$([ $quick -eq 1 ] && echo ' --quick'): $((SECONDS - start)) s in all; results in $reports"
printf '  %s\n' "${summary[@]}"
exit $failed
