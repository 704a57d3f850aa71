#!/usr/bin/env bash
# it-prod.sh: faults during mirroring on the production-shaped bed (integration
# TestProdFaults): Kafka 2.3.0 -> 3.7.1, three brokers each, the mirror's connections through
# loopback fault proxies; source and target blackholes, target leaders killed -9, source
# brokers restarted, the mirror killed -9; for kmirror, MirrorMaker 2 3.7.1 with its defaults
# and with exactly.once.source.support=enabled, one tool per go test run (each starts its own
# clusters). Prints each tool's table (missing, duplicated, time to lag 0 per fault) and the
# wall time.
#
#   scripts/it-prod.sh                  # every tool, 1,000,000 records at least each, 60 s blackholes
#   scripts/it-prod.sh kmirror          # one tool
#   KMIGRATE_FAULTS_RECORDS=50000 KMIGRATE_FAULTS_HOLD=10s KMIGRATE_FAULTS_RATE=500 scripts/it-prod.sh kmirror
#
# On a shared machine it takes /tmp/kmigrate-jvm.lock for each tool's run, as every
# real-broker run does.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(kmirror mm2 mm2-eos)
scripts/fetch-kafka.sh >/dev/null
start=$SECONDS
rc=0
for tool in "${tools[@]}"; do
  t0=$SECONDS
  if ! flock /tmp/kmigrate-jvm.lock env KMIGRATE_PROD_FAULTS=1 KMIGRATE_REQUIRE_REAL=1 KMIGRATE_FAULTS_TOOLS="$tool" \
      go test -count=1 -timeout 60m -v -run '^TestProdFaults$' ./integration/; then
    rc=1
  fi
  echo "it-prod: $tool took $(( SECONDS - t0 ))s"
done
echo "it-prod: wall time $(( SECONDS - start ))s"
exit $rc
