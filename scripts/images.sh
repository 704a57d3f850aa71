#!/usr/bin/env bash
# images.sh: build the local container images the testcontainers provider and kmigrate's own
# image test run. No registry is contacted: the base is made from this machine's Debian package
# sources, the Kafka images copy the jars scripts/fetch-kafka.sh cached, kmigrate's image
# copies binaries built here.
#
#   scripts/images.sh [build [base|kafka|mm2|kmigrate ...]]
#                                 build what is missing or whose inputs changed (default: all;
#                                 kafka needs base, mm2 needs kafka; kmigrate is FROM scratch)
#   scripts/images.sh list        the image names and their input hashes
#
# Images (each labelled org.kmigrate.inputs=<sha256 of its inputs>; rebuilt only when that
# label differs from the inputs' hash now):
#   kmigrate-local/java17:bookworm       Debian bookworm + openjdk-17-jre-headless (mmdebstrap,
#                                        then docker import); user kafka (uid 1000)
#   kmigrate-local/kafka:2.3.0           Kafka 2.3.0 and its ZooKeeper (same image, role by env)
#   kmigrate-local/kafka:3.7.1           Kafka 3.7.1 (KRaft)
#   kmigrate-local/kafka:4.3.1           Kafka 4.3.1 (KRaft)
#   kmigrate-local/mirrormaker2:3.7.1    MirrorMaker 2 3.7.1, dedicated mode
#   kmigrate-local/kmigrate:dev          kverify, kreconcile, kmirror (Dockerfile at the top)
# Needs: a Docker engine (docker info), mmdebstrap (apt-get install mmdebstrap), root for
# mmdebstrap's default mode, and the Kafka jars (scripts/fetch-kafka.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${KMIGRATE_CACHE:-$HOME/.cache/kmigrate}
work=$cache/images
base=kmigrate-local/java17:bookworm
label=org.kmigrate.inputs
base_pkgs=openjdk-17-jre-headless,passwd,ca-certificates

log() { printf 'images: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); start one (dockerd --storage-driver=vfs as root) or set DOCKER_HOST"

# current IMAGE: the inputs label of IMAGE, empty when it does not exist.
current() { docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null || true; }

# build runs docker build with the classic builder (Debian's docker.io has no buildx) and
# without its deprecation banner.
build() { DOCKER_BUILDKIT=0 docker build "$@" 2> >(grep -v -e DEPRECATED -e 'legacy builder' -e buildx -e BuildKit -e 'environment-variable' -e '^ *$' >&2); }

hash_of() { sha256sum | cut -c1-64; }

base_inputs() {
  { printf 'suite bookworm\npackages %s\n' "$base_pkgs"; sed -n '/^build_base()/,/^}/p' "$0"; } | hash_of
}

build_base() {
  local want=$1 tar=$work/java17.tar
  command -v mmdebstrap >/dev/null || die "mmdebstrap not found: apt-get install mmdebstrap"
  mkdir -p "$work"
  log "building $base with mmdebstrap from /etc/apt/sources.list.d/debian.sources"
  local src=/etc/apt/sources.list.d/debian.sources
  [ -f "$src" ] || src=/etc/apt/sources.list
  mmdebstrap --quiet --variant=essential --include="$base_pkgs" \
    --customize-hook='chroot "$1" useradd --uid 1000 --create-home --home-dir /var/lib/kafka kafka' \
    --customize-hook='rm -rf "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/usr/share/locale/* "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    bookworm "$tar" "$src"
  docker import --change "LABEL $label=$want" --change 'ENV LANG=C.UTF-8' "$tar" "$base" >/dev/null
  rm -f "$tar"
}

# log4j: the console logging every Kafka JVM of the test beds reads (integration/cluster embeds
# the same files).
log4j=(integration/cluster/log4j/log4j.properties integration/cluster/log4j/log4j2.properties)

# kafka_inputs VERSION: the base's hash, the recipe files and every jar's checksum.
kafka_inputs() {
  local lib=$cache/kafka-$1/lib
  { current "$base"; cat scripts/images/kafka.Dockerfile scripts/images/kafka-entrypoint.sh "${log4j[@]}";
    (cd "$lib" && sha256sum ./*.jar); } | hash_of
}

build_kafka() {
  local v=$1 want=$2 lib=$cache/kafka-$1/lib ctx
  [ -f "$lib/.complete" ] || die "Kafka $v jars missing in $lib: run scripts/fetch-kafka.sh $v"
  ctx=$(mktemp -d)
  mkdir "$ctx/lib"
  cp -l "$lib"/*.jar "$ctx/lib/" 2>/dev/null || cp "$lib"/*.jar "$ctx/lib/"
  cp scripts/images/kafka-entrypoint.sh "${log4j[@]}" "$ctx/"
  log "building kmigrate-local/kafka:$v"
  build -q --network none -f scripts/images/kafka.Dockerfile --build-arg BASE="$base" \
    --build-arg KAFKA_VERSION="$v" --label "$label=$want" -t "kmigrate-local/kafka:$v" "$ctx" >/dev/null
  rm -rf "$ctx"
}

build_mm2() {
  local want=$1 ctx
  ctx=$(mktemp -d)
  log "building kmigrate-local/mirrormaker2:3.7.1"
  build -q --network none -f scripts/images/mirrormaker2.Dockerfile --build-arg KAFKA=kmigrate-local/kafka:3.7.1 \
    --label "$label=$want" -t kmigrate-local/mirrormaker2:3.7.1 "$ctx" >/dev/null
  rmdir "$ctx"
}

# kmigrate_inputs: the Dockerfile, the module files and the Go source the binaries are built
# from (tests and the integration harness excluded), committed or not.
kmigrate_inputs() {
  { cat Dockerfile go.mod go.sum
    go list -deps -f '{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}{{end}}' ./cmd/... | xargs sha256sum
  } | hash_of
}

build_kmigrate() {
  local want=$1 ctx
  ctx=$(mktemp -d)
  log "building kmigrate-local/kmigrate:dev (static binaries)"
  make -s build BIN="$ctx/bin" GOFLAGS="${GOFLAGS:-} -trimpath" CGO_ENABLED=0 >/dev/null
  cp Dockerfile "$ctx/"
  build -q --network none --label "$label=$want" -t kmigrate-local/kmigrate:dev "$ctx" >/dev/null
  rm -rf "$ctx"
}

# ensure NAME INPUTS BUILDER [ARGS]: build NAME unless its label says INPUTS already.
ensure() {
  local name=$1 want=$2; shift 2
  if [ "$(current "$name")" = "$want" ]; then
    log "$name up to date"
    return
  fi
  local start=$SECONDS
  "$@" "$want"
  log "$name built in $(( SECONDS - start ))s"
}

cmd=${1:-build}
[ $# -gt 0 ] && shift
case $cmd in
  build)
    which=("$@")
    [ ${#which[@]} -gt 0 ] || which=(base kafka mm2 kmigrate)
    for w in "${which[@]}"; do
      case $w in
        base) ensure "$base" "$(base_inputs)" build_base ;;
        kafka) for v in 2.3.0 3.7.1 4.3.1; do ensure "kmigrate-local/kafka:$v" "$(kafka_inputs $v)" build_kafka "$v"; done ;;
        mm2) ensure kmigrate-local/mirrormaker2:3.7.1 "$(current kmigrate-local/kafka:3.7.1)$(hash_of <scripts/images/mirrormaker2.Dockerfile)" build_mm2 ;;
        kmigrate) ensure kmigrate-local/kmigrate:dev "$(kmigrate_inputs)" build_kmigrate ;;
        *) die "unknown image $w (want base, kafka, mm2 or kmigrate)" ;;
      esac
    done
    ;;
  list)
    for i in "$base" kmigrate-local/kafka:2.3.0 kmigrate-local/kafka:3.7.1 kmigrate-local/kafka:4.3.1 kmigrate-local/mirrormaker2:3.7.1 kmigrate-local/kmigrate:dev; do
      printf '%-40s %s\n' "$i" "$(current "$i")"
    done ;;
  *) die "unknown command $cmd (want build or list)" ;;
esac
