#!/usr/bin/env bash
# bench-reconcile.sh: kreconcile's plan over 1,000 groups x 24 partitions on two real Kafka 3.7.1
# clusters mirrored by the real MirrorMaker 2 3.7.1: plan time, and how many partitions MM2's own
# checkpoints got exact against E(G). About 5 minutes, mostly waiting for MM2 to checkpoint.
# Needs Java 17 and the Kafka jars (scripts/fetch-kafka.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
KMIGRATE_BENCH=1 go test ./integration/ -run '^TestReconcileBench$' -count=1 -v -timeout 30m
