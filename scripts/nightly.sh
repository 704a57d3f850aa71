#!/usr/bin/env bash
# nightly.sh: the end-to-end scenarios on real brokers, with their reports, once per version
# pair (source-target); the same steps as .github/workflows/nightly.yml, runnable on this
# machine.
#
#   scripts/nightly.sh                        # every pair (below)
#   scripts/nightly.sh -run SeedScenario      # extra arguments go to go test
#   NIGHTLY_PAIRS=2.3.0-4.3.1 scripts/nightly.sh          # one pair
#   KMIGRATE_PROVIDER=testcontainers scripts/nightly.sh   # brokers in Docker (MirrorMaker 2 stays a JVM)
#
# The pairs are KMIGRATE_PAIR's (integration/pair_test.go): 2.3.0-3.7.1, the pair CI runs,
# runs every test under ./integration/...; each other pair runs the suites that follow
# KMIGRATE_PAIR ($NIGHTLY_PAIR_RUN), the rest being the same on every pair. A -run among the
# arguments replaces that selection.
#
# Environment:
#   KMIGRATE_PROVIDER    jvm (default: Kafka as JVM processes) or testcontainers
#   KMIGRATE_REPORT_DIR  where the reports go. Default: reports
#   NIGHTLY_PAIRS        the pairs, separated by spaces. Default: every pair
#   NIGHTLY_PAIR_RUN     the go test -run of the pairs other than 2.3.0-3.7.1. Default: the
#                        suites that follow KMIGRATE_PAIR
#   NIGHTLY_TIMEOUT      go test -timeout, per pair. Default: 40m
# KMIGRATE_REQUIRE_REAL=1 is always set: a missing Java 17, Maven or Docker fails instead of
# skipping.
#
# Writes into $KMIGRATE_REPORT_DIR/<pair>/ (e.g. reports/2.3.0-4.3.1/):
#   <name>.html, <name>.xml, <name>.json
#                  the kverify / kreconcile reports each scenario writes (report.WriteFiles:
#                  the page, JUnit with a case per partition or group partition, the value)
#   go-test/go-test.json  the go test -json events
#   go-test/go-test.xml   the same as JUnit XML (a case per test; failures carry the test's log)
#   index.txt      the list of files and the closing line "N passed, N failed, N skipped"
# and $KMIGRATE_REPORT_DIR/index.txt, one line per pair: its go test exit status and summary.
# Exit status: 0 when go test passed on every pair, else 1, or 2 when a prerequisite is
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."

all_pairs="2.3.0-3.7.1 2.3.0-4.3.1 3.7.1-4.3.1 4.3.1-4.3.1"
default_pair=2.3.0-3.7.1
# The tests that follow KMIGRATE_PAIR (integration/doc.go lists them).
NIGHTLY_PAIR_RUN=${NIGHTLY_PAIR_RUN:-'^(TestVerify|TestVerifyNothingToCompare|TestVerifyAll|TestVerifyState|TestDigest|TestPreflight|TestReconcileSeed|TestReconcileCases|TestReconcileRollbackSafety|TestACLs|TestACLsSecure3|TestSecureBed|TestMirror|TestMirrorSafety|TestCutover|TestRoundTrip|TestIsolationAfterKill|TestIsolationAfterKillMM2EOS|TestStreamsAppMoved|TestCompactedTopicMoved)$'}

export KMIGRATE_REQUIRE_REAL=1
export KMIGRATE_PROVIDER=${KMIGRATE_PROVIDER:-jvm}
dir=${KMIGRATE_REPORT_DIR:-reports}
dir=${dir%/}
mkdir -p "$dir"
# An absolute path, because go test runs each package in its own directory.
top=$(cd "$dir" && pwd)

log() { printf '\n== %s nightly: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf 'nightly: %s\n' "$*" >&2; exit 2; }

pairs=${NIGHTLY_PAIRS:-$all_pairs}
for pair in $pairs; do
  case " $all_pairs " in
    *" $pair "*) ;;
    *) die "NIGHTLY_PAIRS: unknown pair $pair: use some of $all_pairs" ;;
  esac
done

command -v go >/dev/null || die "go not found: install Go $(sed -n 's/^go //p' go.mod)"
command -v java >/dev/null || die "java not found: MirrorMaker 2 runs as a JVM with every provider; install Java 17 (apt-get install openjdk-17-jdk-headless)"
case $KMIGRATE_PROVIDER in
  jvm) ;;
  testcontainers)
    command -v docker >/dev/null && docker info >/dev/null 2>&1 ||
      die "KMIGRATE_PROVIDER=testcontainers needs a running Docker engine (docker info failed); use KMIGRATE_PROVIDER=jvm here" ;;
  *) die "KMIGRATE_PROVIDER=$KMIGRATE_PROVIDER: use jvm or testcontainers" ;;
esac

log "Kafka runtimes (cached in ${KMIGRATE_CACHE:-~/.cache/kmigrate})"
scripts/fetch-kafka.sh

# Build the converter first, so a compile error cannot cut the pipe under a running test.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/go2junit" ./report/cmd/go2junit

failed=0
: > "$top/index.txt"
for pair in $pairs; do
  # The scenario tests write into the pair's directory.
  export KMIGRATE_PAIR=$pair KMIGRATE_REPORT_DIR=$top/$pair
  mkdir -p "$KMIGRATE_REPORT_DIR/go-test"
  pkgs=./integration/... sel=()
  if [ "$pair" != "$default_pair" ]; then
    pkgs=./integration/ sel=(-run "$NIGHTLY_PAIR_RUN")
  fi
  log "go test $pkgs, pair $pair (provider $KMIGRATE_PROVIDER, reports in $KMIGRATE_REPORT_DIR)"
  start=$(date +%s)
  set +e
  go test -json -count=1 -p 1 -timeout "${NIGHTLY_TIMEOUT:-40m}" "${sel[@]}" "$@" "$pkgs" 2>&1 |
    "$bin/go2junit" -echo -name "kmigrate nightly ($KMIGRATE_PROVIDER, $pair)" \
      -json "$KMIGRATE_REPORT_DIR/go-test/go-test.json" -out "$KMIGRATE_REPORT_DIR/go-test/go-test.xml" | tee "$bin/tail.txt"
  status=(${PIPESTATUS[@]})
  set -e
  [ "${status[1]}" = 0 ] || die "pair $pair: converting the go test output to JUnit failed (exit ${status[1]})"
  [ "${status[0]}" = 0 ] || failed=1

  summary=$(tail -n 1 "$bin/tail.txt")
  {
    echo "kmigrate nightly, provider $KMIGRATE_PROVIDER, pair $pair, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - start ))s"
    echo "go test exit status ${status[0]}: $summary"
    (cd "$KMIGRATE_REPORT_DIR" && find . -type f ! -name index.txt | sed 's|^\./||' | sort)
  } > "$KMIGRATE_REPORT_DIR/index.txt"
  echo "$pair: go test exit status ${status[0]}: $summary" >> "$top/index.txt"
  log "reports of $pair:"
  sed 's/^/  /' "$KMIGRATE_REPORT_DIR/index.txt"
done
log "pairs:"
sed 's/^/  /' "$top/index.txt"
exit "$failed"
