#!/usr/bin/env bash
# fetch-kafka.sh: resolve the Kafka runtimes the real-broker tests use into a cache outside git.
#
#   scripts/fetch-kafka.sh [2.3.0|3.7.1|4.3.1|streams-3.7.1|streams-4.3.1 ...]    (default: all five)
#
# Each runtime lands in $KMIGRATE_CACHE/kafka-<version>/lib (default cache ~/.cache/kmigrate) as
# plain jars resolved by Maven from Maven Central; nothing is committed. A runtime whose
# lib/.complete marker exists is not fetched again, so the tests run offline once cached.
#   2.3.0: kafka_2.12 with ZooKeeper 3.5.9 swapped in (3.4.14 cannot connect on JDK 14+,
#          ZOOKEEPER-3779), log4j 1.2.17 and slf4j-log4j12 (the POM omits logging).
#   3.7.1: kafka_2.13 (KRaft) and connect-mirror (MirrorMaker 2) with reload4j logging.
#   4.3.1: kafka_2.13 (KRaft only: Kafka 4 has no ZooKeeper mode), connect-mirror and
#          kafka-tools (the CLI tools moved there in 4.x), with log4j2: the POMs bring
#          log4j-api and log4j-core but no SLF4J binding, so log4j-slf4j-impl is added (SLF4J
#          1.7 is what 4.3.1 uses). 4.3.1 is the newest 4.x whose connect-mirror resolves
#          here: kafka_2.13 4.3.2 and 4.4.0 do, but connect-mirror 4.3.2 and 4.4.0 do not,
#          and the bed runs the broker and MirrorMaker 2 of one release.
#   streams-3.7.1: kafka-streams 3.7.1 (with RocksDB) and reload4j logging, the runtime of the
#          test tree's Kafka Streams application (integration/testdata/streams): 3.7.1 is the
#          newest Streams that still runs exactly_once (v1) against a 2.3.0 broker.
#   streams-4.3.1: kafka-streams 4.3.1 with log4j2 (as 4.3.1): the same application as a
#          member of a streams group (group.protocol=streams, KIP-1071) on Kafka 4.
set -euo pipefail

cache=${KMIGRATE_CACHE:-$HOME/.cache/kmigrate}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(2.3.0 3.7.1 4.3.1 streams-3.7.1 streams-4.3.1)

command -v mvn >/dev/null || { echo "fetch-kafka: mvn not found; install Maven (apt-get install maven)" >&2; exit 2; }
command -v java >/dev/null || { echo "fetch-kafka: java not found; install Java 17 (apt-get install openjdk-17-jdk-headless)" >&2; exit 2; }

# pom ARTIFACT: the POM of runtime ARTIFACT, its <dependency> elements read from stdin.
pom() {
  printf '%s\n' '<project xmlns="http://maven.apache.org/POM/4.0.0">' '  <modelVersion>4.0.0</modelVersion>' \
    "  <groupId>kmigrate.runtime</groupId><artifactId>$1</artifactId><version>1</version>" '  <dependencies>'
  cat
  printf '%s\n' '  </dependencies>' '</project>'
}

pom_230() {
  pom kafka-2.3.0 <<'DEPS'
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.12</artifactId><version>2.3.0</version>
      <exclusions><exclusion><groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId></exclusion></exclusions>
    </dependency>
    <dependency><groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId><version>3.5.9</version></dependency>
    <dependency><groupId>log4j</groupId><artifactId>log4j</artifactId><version>1.2.17</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId><version>1.7.26</version></dependency>
DEPS
}

pom_371() {
  pom kafka-3.7.1 <<'DEPS'
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>3.7.1</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId><version>3.7.1</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId><version>1.2.25</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
DEPS
}

pom_431() {
  pom kafka-4.3.1 <<'DEPS'
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>4.3.1</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId><version>4.3.1</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>4.3.1</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.25.4</version></dependency>
DEPS
}

pom_streams371() {
  pom kafka-streams-3.7.1 <<'DEPS'
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>3.7.1</version></dependency>
    <dependency><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId><version>1.2.25</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
DEPS
}

pom_streams431() {
  pom kafka-streams-4.3.1 <<'DEPS'
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>4.3.1</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.25.4</version></dependency>
DEPS
}

for v in "${versions[@]}"; do
  dir="$cache/kafka-$v"
  if [ -f "$dir/lib/.complete" ]; then
    echo "fetch-kafka: $v cached in $dir/lib"
    continue
  fi
  case "$v" in
    2.3.0) pom=$(pom_230) ;;
    3.7.1) pom=$(pom_371) ;;
    4.3.1) pom=$(pom_431) ;;
    streams-3.7.1) pom=$(pom_streams371) ;;
    streams-4.3.1) pom=$(pom_streams431) ;;
    *) echo "fetch-kafka: unknown version $v (want 2.3.0, 3.7.1, 4.3.1, streams-3.7.1 or streams-4.3.1)" >&2; exit 2 ;;
  esac
  mkdir -p "$dir"
  printf '%s\n' "$pom" >"$dir/pom.xml"
  rm -rf "$dir/lib.tmp"
  echo "fetch-kafka: resolving Kafka $v with Maven into $dir/lib"
  start=$(date +%s)
  mvn -B -q -f "$dir/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dir/lib.tmp" -DincludeScope=runtime
  rm -rf "$dir/lib" && mv "$dir/lib.tmp" "$dir/lib"
  touch "$dir/lib/.complete"
  echo "fetch-kafka: $v done in $(( $(date +%s) - start ))s ($(ls "$dir/lib" | wc -l) jars)"
done
