#!/usr/bin/env bash
# Renders the Kubernetes manifests of deploy/ with kustomize and validates every resource
# against the Kubernetes OpenAPI schemas (strict: unknown fields are errors), for the oldest and
# the newest Kubernetes version the manifests are meant for. Then it checks that the validator
# can fail: broken copies of the rendered manifests (a wrong type, an unknown field, a pod
# without containers) must be rejected. Exit 0 when all is valid, 1 otherwise.
#
# Tools, installed on first use (no network beyond the Go module proxy and PyPI):
#   kustomize          go run sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION
#   kubernetes-validate pip, in a virtualenv under ~/.cache/kmigrate (it bundles the schemas)
# Needs: go, python3 with venv (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.2}             # v5.8.3 needs Go 1.27
KUBERNETES_VALIDATE_VERSION=${KUBERNETES_VALIDATE_VERSION:-1.37.0}
K8S_VERSIONS=${K8S_VERSIONS:-"1.29.0 1.37.0"}                # backoffLimitPerIndex: 1.29+
ROOTS=${ROOTS:-"deploy deploy/kverify-merge"}                # the kustomization roots
CACHE=${KMIGRATE_CACHE:-$HOME/.cache/kmigrate}

venv=$CACHE/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION
validator=$venv/bin/kubernetes-validate
if [ ! -x "$validator" ]; then
  echo "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail=0
for root in $ROOTS; do
  file=$out/$(echo "$root" | tr / -).yaml
  if ! go run "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" build "$root" >"$file"; then
    echo "FAIL: kustomize build $root"
    fail=1
    continue
  fi
  n=$(grep -c '^kind:' "$file" || true)
  for v in $K8S_VERSIONS; do
    if "$validator" --strict --quiet -k "$v" "$file"; then
      echo "ok: $root: $n resources valid against Kubernetes $v (strict)"
    else
      echo "FAIL: $root against Kubernetes $v"
      fail=1
    fi
  done
done

# The validator must reject broken manifests, or the checks above prove nothing: each of these
# edits of the rendered deploy/ (it reports one error per resource, so one edit at a time) must
# be refused.
must_reject() { # NAME SED-EXPRESSION
  local broken=$out/broken.yaml msgs
  sed "$2" "$out/deploy.yaml" >"$broken"
  if cmp -s "$out/deploy.yaml" "$broken"; then
    echo "FAIL: self-check '$1' changed nothing (did the manifests change?)"
    fail=1
  elif msgs=$("$validator" --strict --quiet "$broken" 2>&1); then
    echo "FAIL: kubernetes-validate accepted manifests with $1"
    fail=1
  else
    echo "ok: rejected with $1: $(echo "$msgs" | grep -m1 -o 'resource .*')"
  fi
}
must_reject "a string for an integer (replicas: three)" 's/^  replicas: 3$/  replicas: three/'
must_reject "an unknown field (terminationGracePeriodSecond)" 's/^      terminationGracePeriodSeconds: 60$/      terminationGracePeriodSecond: 60/'
must_reject "pod templates without containers" 's/^      containers:$/      initContainers:/'
exit $fail
