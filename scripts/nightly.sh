#!/usr/bin/env bash
# nightly.sh: the end-to-end scenarios on real brokers, with their reports; the same steps as
# .github/workflows/nightly.yml, runnable on this machine.
#
#   scripts/nightly.sh                        # every test under ./integration/...
#   scripts/nightly.sh -run SeedScenario      # extra arguments go to go test
#   KMIGRATE_PROVIDER=testcontainers scripts/nightly.sh   # brokers in Docker (MirrorMaker 2 stays a JVM)
#
# Environment:
#   KMIGRATE_PROVIDER    jvm (default: Kafka 2.3.0 and 3.7.1 as JVM processes) or testcontainers
#   KMIGRATE_REPORT_DIR  where the reports go. Default: reports
#   NIGHTLY_TIMEOUT      go test -timeout. Default: 40m
# KMIGRATE_REQUIRE_REAL=1 is always set: a missing Java 17, Maven or Docker fails instead of
# skipping.
#
# Writes into $KMIGRATE_REPORT_DIR:
#   <name>.html, <name>.xml, <name>.json
#                  the kverify / kreconcile reports each scenario writes (report.WriteFiles:
#                  the page, JUnit with a case per partition or group partition, the value)
#   go-test/go-test.json  the go test -json events
#   go-test/go-test.xml   the same as JUnit XML (a case per test; failures carry the test's log)
#   index.txt      the list of files and the closing line "N passed, N failed, N skipped"
# Exit status: that of go test (0 all passed), or 2 when a prerequisite is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

export KMIGRATE_REQUIRE_REAL=1
export KMIGRATE_PROVIDER=${KMIGRATE_PROVIDER:-jvm}
dir=${KMIGRATE_REPORT_DIR:-reports}
dir=${dir%/}
mkdir -p "$dir/go-test"
# The scenario tests write here; an absolute path, because go test runs each package in its
# own directory.
KMIGRATE_REPORT_DIR=$(cd "$dir" && pwd)
export KMIGRATE_REPORT_DIR

log() { printf '\n== %s nightly: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { printf 'nightly: %s\n' "$*" >&2; exit 2; }

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

log "go test ./integration/... (provider $KMIGRATE_PROVIDER, reports in $KMIGRATE_REPORT_DIR)"
start=$(date +%s)
set +e
go test -json -count=1 -p 1 -timeout "${NIGHTLY_TIMEOUT:-40m}" "$@" ./integration/... 2>&1 |
  "$bin/go2junit" -echo -name "kmigrate nightly ($KMIGRATE_PROVIDER)" \
    -json "$dir/go-test/go-test.json" -out "$dir/go-test/go-test.xml" | tee "$bin/tail.txt"
status=(${PIPESTATUS[@]})
set -e
[ "${status[1]}" = 0 ] || die "converting the go test output to JUnit failed (exit ${status[1]})"

summary=$(tail -n 1 "$bin/tail.txt")
{
  echo "kmigrate nightly, provider $KMIGRATE_PROVIDER, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - start ))s"
  echo "go test exit status ${status[0]}: $summary"
  (cd "$dir" && find . -type f ! -name index.txt | sed 's|^\./||' | sort)
} > "$dir/index.txt"
log "reports:"
sed 's/^/  /' "$dir/index.txt"
exit "${status[0]}"
