#!/usr/bin/env bash
# bench.sh: every benchmark that compares kmigrate with a peer in the same run, on real brokers
# (JVM processes from the cached jars). Each writes a Markdown table under reports/ that
# BENCHMARKS.md quotes. Run one with `scripts/bench.sh verify|reconcile|mirror`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/fetch-kafka.sh" >/dev/null
which=("$@")
[ ${#which[@]} -gt 0 ] || which=(verify reconcile mirror)
for b in "${which[@]}"; do
  case "$b" in
    verify) scripts/bench-verify.sh ;;
    reconcile) scripts/bench-reconcile.sh ;;
    mirror) scripts/bench-mirror.sh ;;
    *) echo "bench.sh: unknown benchmark $b (verify, reconcile, mirror)" >&2; exit 2 ;;
  esac
done
