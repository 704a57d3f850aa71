#!/usr/bin/env bash
# it-containers.sh: the container suite. Builds the local images when their inputs changed
# (scripts/images.sh), then runs on containers (KMIGRATE_PROVIDER=testcontainers): the seed
# scenario, the verify and reconcile suites, kmigrate's own image mirroring the seed case
# (docker run), the container faults, and MirrorMaker 2 in its image. (The provider's own
# TestTestcontainers asks for containers whatever the provider: it runs with the other tests.)
#
# Without a Docker engine it says so and exits 0, unless KMIGRATE_REQUIRE_CONTAINERS=1 (CI),
# which makes that, and every skip inside the suite, a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! docker info >/dev/null 2>&1; then
  if [ "${KMIGRATE_REQUIRE_CONTAINERS:-}" = 1 ]; then
    echo "it-containers: no Docker engine answers (docker info failed) and KMIGRATE_REQUIRE_CONTAINERS=1" >&2
    exit 1
  fi
  echo "it-containers: skipped: no Docker engine answers (docker info failed); start one (dockerd --storage-driver=vfs as root) to run the container suite"
  exit 0
fi

start=$SECONDS
scripts/fetch-kafka.sh >/dev/null
scripts/images.sh build
echo "it-containers: images ready in $(( SECONDS - start ))s"

# go test -json through scripts/testtimes (built first, so a compile error cannot cut the pipe
# under a running test): go test's usual lines (every line with KMIGRATE_IT_VERBOSE), and the
# events in reports/it-containers.json, which make test's closing summary reads.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/testtimes" ./scripts/testtimes
mkdir -p reports

export KMIGRATE_PROVIDER=testcontainers
start=$SECONDS
# Both packages in one go test, side by side; in ./integration the parallel tests run four at
# a time, as on JVMs (integration/main_test.go, bedGate).
go test -json -count=1 -timeout 20m ./integration/ ./integration/cluster/ \
  -run '^(TestSeedScenario|TestVerify|TestVerifyNothingToCompare|TestReconcileSeed|TestReconcileCases|TestReconcileRollbackSafety|TestContainerImage|TestContainerFaults|TestMM2)$' |
  "$bin/testtimes" ${KMIGRATE_IT_VERBOSE:+-v} -prefix "it-containers: " -summary=false -json reports/it-containers.json
echo "it-containers: suite took $(( SECONDS - start ))s"
