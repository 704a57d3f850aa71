#!/bin/bash
# Entry point of kmigrate's local Kafka images (built by scripts/images.sh). It reads the
# same environment as the public images the testcontainers provider can also run, so one
# provider drives both:
#   ZOOKEEPER_CLIENT_PORT set        -> a ZooKeeper server (Kafka 2.3.0 image only),
#                                       ZOOKEEPER_TICK_TIME optional
#   otherwise                        -> a Kafka broker; every KAFKA_<NAME> variable becomes the
#                                       property <name> ('_' -> '.', '__' -> '_', '___' -> '-'),
#                                       as Confluent's and Apache's images map them
#   CLUSTER_ID (KRaft: 3.7.1, 4.3.1) -> the log directories are formatted with it first
#   KAFKA_HEAP_OPTS, KAFKA_JVM_OPTS  -> JVM flags (defaults: small heap, serial GC, C1 only)
#   first argument "mirrormaker2"    -> MirrorMaker 2 in dedicated mode on the remaining
#                                       arguments (e.g. /etc/mm2/mm2.properties --clusters b)
set -euo pipefail

lib=/opt/kafka/lib
conf=$(mktemp -d /tmp/kafka-conf.XXXXXX)
heap=${KAFKA_HEAP_OPTS:--Xms32m -Xmx512m}
jvm=${KAFKA_JVM_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData}

# The console logging of the JVM provider's processes (integration/cluster/log4j, copied in by
# scripts/images.sh): log4j 1 reads the first file, log4j2 (Kafka 4) the second.
log=/opt/kafka/config
logcfg=(-Dlog4j.configuration="file:$log/log4j.properties" -Dlog4j2.configurationFile="$log/log4j2.properties")

java_run() {
  # shellcheck disable=SC2086 # heap and jvm are word lists by design
  exec java $heap $jvm -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true \
    "${logcfg[@]}" -Dkafka.logs.dir=/tmp \
    -cp "$lib/*" "$@"
}

# property maps an environment variable's name (without its prefix) to a property name.
property() {
  local k=${1,,}
  k=${k//___/-}
  k=${k//__/$'\x01'}
  k=${k//_/.}
  printf '%s' "${k//$'\x01'/_}"
}

if [ "${1:-}" = mirrormaker2 ]; then
  shift
  java_run org.apache.kafka.connect.mirror.MirrorMaker "$@"
fi

if [ -n "${ZOOKEEPER_CLIENT_PORT:-}" ]; then
  mkdir -p /var/lib/kafka/zookeeper
  cat >"$conf/zoo.cfg" <<ZOO
tickTime=${ZOOKEEPER_TICK_TIME:-2000}
dataDir=/var/lib/kafka/zookeeper
clientPort=$ZOOKEEPER_CLIENT_PORT
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
ZOO
  java_run org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf/zoo.cfg"
fi

props=$conf/server.properties
: >"$props"
while IFS='=' read -r name value; do
  case $name in
    KAFKA_HEAP_OPTS|KAFKA_JVM_OPTS|KAFKA_VERSION) ;;
    KAFKA_*) printf '%s=%s\n' "$(property "${name#KAFKA_}")" "$value" >>"$props" ;;
  esac
done < <(env)
grep -q '^log\.dirs=' "$props" || echo "log.dirs=/var/lib/kafka/data" >>"$props"

if [ -n "${CLUSTER_ID:-}" ]; then
  (heap="-Xmx256m"; java $heap $jvm "${logcfg[@]}" \
    -cp "$lib/*" kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$props" --ignore-formatted)
fi
java_run kafka.Kafka "$props"
