#!/usr/bin/env bash
# it-prod.sh: faults during mirroring on the production-shaped bed (integration
# TestProdFaults): Kafka 2.3.0 -> 3.7.1, three brokers each, the mirrors' connections through
# loopback fault proxies; source and target blackholes, target leaders killed -9, source
# brokers restarted, the mirrors killed -9, kmirror's stale owner. kmirror, MirrorMaker 2 3.7.1
# with its defaults and with exactly.once.source.support=enabled run side by side on one bed
# (a topic each), so every fault hits all three. Prints the table (per tool and fault: missing,
# duplicated, time to lag 0, the idle group on the target) and the wall time.
#
#   scripts/it-prod.sh                  # every tool, 1,000,000 records at least each, 60 s blackholes
#   scripts/it-prod.sh kmirror          # some tools only
#   KMIGRATE_FAULTS_RECORDS=50000 KMIGRATE_FAULTS_HOLD=10s KMIGRATE_FAULTS_RATE=500 scripts/it-prod.sh kmirror
#
# On a shared machine it takes /tmp/kmigrate-jvm.lock, as every real-broker run does.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(IFS=,; echo "${*:-kmirror,mm2,mm2-eos}")
scripts/fetch-kafka.sh >/dev/null
start=$SECONDS
rc=0
flock /tmp/kmigrate-jvm.lock env KMIGRATE_PROD_FAULTS=1 KMIGRATE_REQUIRE_REAL=1 KMIGRATE_FAULTS_TOOLS="$tools" \
  go test -count=1 -timeout 60m -v -run '^TestProdFaults$' ./integration/ || rc=1
echo "it-prod: $tools: wall time $(( SECONDS - start ))s"
exit $rc
