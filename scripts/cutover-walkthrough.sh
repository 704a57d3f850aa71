#!/usr/bin/env bash
# cutover-walkthrough.sh: docs/cutover.md, run against real brokers.
#
#   flock /tmp/kmigrate-jvm.lock scripts/cutover-walkthrough.sh [OUTDIR]
#
# Starts Kafka 2.3.0 (ZooKeeper, "old") and 3.7.1 (KRaft, "new") with ACLs on
# (scripts/cluster.sh up --acls), builds bin/ (make build), plays the seed case with Kafka's
# own console tools (120 records consumed by test-consumer-kafkaupgrade-109, 30 more), then
# runs every command of the section in order and writes each command and what it printed
# (stdout and stderr, then its exit status) to OUTDIR/NN-step.txt (default
# /tmp/kmigrate-cutover). Stops the clusters (scripts/cluster.sh down) however it ends.
# Needs Java 17 and the jars of scripts/fetch-kafka.sh. Exit: 0 done, 1 a step failed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/kmigrate-cutover}
work=$out/work
cache=${KMIGRATE_CACHE:-$HOME/.cache/kmigrate}
rm -rf "$out"
mkdir -p "$work"
cd "$root"
make build >/dev/null

pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$root/scripts/cluster.sh" down || true
}
trap cleanup EXIT
scripts/cluster.sh up --acls 2.3.0 3.7.1 | tee "$out/00-cluster-up.txt"
# shellcheck disable=SC1091
source "${KMIGRATE_RUNDIR:-${TMPDIR:-/tmp}/kmigrate-clusters}/env"
export OLD=$KMIGRATE_BOOTSTRAP_2_3_0 NEW=$KMIGRATE_BOOTSTRAP_3_7_1
export PATH=$root/bin:$PATH
cd "$work"

# Kafka's own tools, as kafka-topics.sh, kafka-console-producer.sh, kafka-console-consumer.sh
# and kafka-acls.sh run them (3.7.1's, but topics are created with 2.3.0's TopicCommand).
jrun() { local v=$1; shift; java -Xmx256m -XX:TieredStopAtLevel=1 -cp "$cache/kafka-$v/lib/*" "$@"; }
kafka-topics() { jrun 2.3.0 kafka.admin.TopicCommand "$@" 2>&1 | grep -v '^SLF4J' || true; }
kafka-console-producer() { jrun 3.7.1 kafka.tools.ConsoleProducer "$@"; }
kafka-console-consumer() { jrun 3.7.1 kafka.tools.ConsoleConsumer "$@"; }
kafka-acls() { jrun 3.7.1 kafka.admin.AclCommand "$@"; }
export -f jrun kafka-topics kafka-console-producer kafka-console-consumer kafka-acls
export cache

n=0
# step NAME 'COMMAND': runs COMMAND with bash, records "$ COMMAND", its output and exit status.
step() {
  local name=$1 cmd=$2 code=0
  n=$((n + 1))
  local f; f=$(printf '%s/%02d-%s.txt' "$out" "$n" "$name")
  { echo "\$ $cmd"; bash -c "$cmd" 2>&1 || code=$?; echo "(exit $code)"; } >"$f"
  cat "$f"
}
# bg NAME 'COMMAND': starts COMMAND in the background, output to OUTDIR/NAME.log.
bg() {
  echo "\$ $2 &" >"$out/$1.log"
  bash -c "exec $2" >>"$out/$1.log" 2>&1 &
  pids+=($!)
  echo "started $1 (pid $!)"
}
stop() { kill -TERM "$1"; wait "$1" || true; }
waitfor() { # waitfor WHAT 'TEST': polls TEST every 0.5 s, 120 s at most
  local deadline=$(( $(date +%s) + 120 ))
  until bash -c "$2" >/dev/null 2>&1; do
    [ "$(date +%s)" -le "$deadline" ] || { echo "timeout waiting for $1" >&2; exit 1; }
    sleep 0.5
  done
}
metric() { curl -s "http://$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

topic=GEN.LAB.P.TEST.TESTINFO.OLD2NEW
group=test-consumer-kafkaupgrade-109
cat >mm2.properties <<EOF
clusters=old,new
old.bootstrap.servers=$OLD
new.bootstrap.servers=$NEW
old->new.enabled=true
old->new.topics=$topic
new->old.enabled=true
new->old.topics=$topic
new.consumer.auto.offset.reset=latest
replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy
offset-syncs.topic.location=target
replication.factor=1
offset-syncs.topic.replication.factor=1
checkpoints.topic.replication.factor=1
emit.checkpoints.enabled=false
EOF
step mm2-properties 'cat mm2.properties | sed "s/=127.0.0.1:[0-9]*/=.../"'

# The seed case on old, with the ACLs an operator had there.
step seed-topic 'kafka-topics --bootstrap-server $OLD --create --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --partitions 1 --replication-factor 1'
step seed-produce-120 'for i in $(seq 0 119); do echo "k$((i % 10)):old-$i"; done | kafka-console-producer --bootstrap-server $OLD --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --property parse.key=true --property key.separator=:'
step seed-consume-120 'kafka-console-consumer --bootstrap-server $OLD --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --group test-consumer-kafkaupgrade-109 --from-beginning --max-messages 120 --consumer-property max.poll.records=1 >old-read.txt; sed -n "1p;\$p" old-read.txt; wc -l <old-read.txt'
step seed-acls 'kafka-acls --bootstrap-server $OLD --add --allow-principal User:CN=billing,O=Finance --operation Read --operation Describe --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --group test-consumer-kafkaupgrade-109 >/dev/null &&
kafka-acls --bootstrap-server $OLD --add --allow-principal User:CN=ingest,O=Finance --operation Write --operation Describe --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW >/dev/null &&
kafka-acls --bootstrap-server $OLD --add --allow-principal User:CN=ingest,O=Finance --operation IdempotentWrite --cluster >/dev/null &&
kafka-acls --bootstrap-server $OLD --add --allow-principal User:ops --operation All --topic GEN.LAB.P.TEST. --resource-pattern-type prefixed >/dev/null &&
kafka-acls --bootstrap-server $OLD --add --deny-principal User:CN=billing,O=Finance --operation Write --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW >/dev/null &&
kafka-acls --bootstrap-server $OLD --add --allow-principal "User:*" --operation Describe --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW >/dev/null &&
kafka-acls --bootstrap-server $OLD --list'

# The forward mirror.
bg kmirror-old-new 'kmirror run --config mm2.properties --flow "old->new" --metrics-addr 127.0.0.1:9102'
fwd=${pids[-1]}
waitfor "kmirror old->new to copy 120 records" '[ "$(curl -s http://127.0.0.1:9102/metrics | grep -c kmirror_)" -gt 0 ] && kverify diff --mm2-config mm2.properties --flow "old->new" --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --quiet'

# 1. Preflight.
step preflight 'kverify topics --mm2-config mm2.properties --flow "old->new"'
# 2. ACLs.
step acls-plan "kreconcile acls --mm2-config mm2.properties --flow 'old->new' --map-principal 'User:CN=(.*),O=Finance=>User:CN=\$1-mirror,O=Finance'"
step acls-apply "kreconcile acls --mm2-config mm2.properties --flow 'old->new' --map-principal 'User:CN=(.*),O=Finance=>User:CN=\$1-mirror,O=Finance' --apply --backup acls-backup.json"
step acls-again "kreconcile acls --mm2-config mm2.properties --flow 'old->new' --map-principal 'User:CN=(.*),O=Finance=>User:CN=\$1-mirror,O=Finance'"
step acls-list-new 'kafka-acls --bootstrap-server $NEW --list'
step acls-rollback 'kreconcile rollback --mm2-config mm2.properties --flow "old->new" --backup acls-backup.json'
step acls-reapply "kreconcile acls --mm2-config mm2.properties --flow 'old->new' --map-principal 'User:CN=(.*),O=Finance=>User:CN=\$1-mirror,O=Finance' --apply --backup acls-backup-2.json | head -3"

# 3. Continuous verification while the mirror runs.
bg kverify-follow 'kverify diff --mm2-config mm2.properties --flow "old->new" --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --state verify-state.json --follow --interval 2s --metrics-addr 127.0.0.1:9103'
ver=${pids[-1]}
verified() { [ "$(curl -s http://127.0.0.1:9103/metrics | awk '$1 ~ /^kverify_verified_offset/ {print $2}')" = "$1" ] && [ "$(curl -s http://127.0.0.1:9103/metrics | awk '$1 == "kverify_lag_records" {print $2}')" = 0 ]; }
export -f verified
waitfor "kverify verified to 120 at lag 0" 'verified 120'
step verify-metrics-120 'curl -s http://127.0.0.1:9103/metrics | grep "^kverify_"'
step seed-produce-30 'for i in $(seq 120 149); do echo "k$((i % 10)):old-$i"; done | kafka-console-producer --bootstrap-server $OLD --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --property parse.key=true --property key.separator=:'
waitfor "kverify verified to 150 at lag 0" 'verified 150'
step verify-metrics-150 'curl -s http://127.0.0.1:9103/metrics | grep "^kverify_"'
stop "$ver"
cp "$out/kverify-follow.log" "$out/$(printf %02d $((n + 1)))-verify-follow.txt"; n=$((n + 1))

# The final check, before anything is written to new (a record written there directly is
# extra to this flow): the producers have stopped on old, the follow run saw lag 0.
step verify-tail-table 'kverify diff --mm2-config mm2.properties --flow "old->new" --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --state verify-state.json --quiet'
step verify-tail 'kverify diff --mm2-config mm2.properties --flow "old->new" --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --state verify-state.json --quiet --format json | grep -E "\"(identical|source_start|source_end|target_start|target_end)\""'

# 4. The producers move. The way back first: the forward mirror has copied everything; stop
# it, start the reverse one (identity policy, new->old, from the end of the new topic).
stop "$fwd"
bg kmirror-new-old 'kmirror run --config mm2.properties --flow "new->old" --metrics-addr 127.0.0.1:9104'
rev=${pids[-1]}
waitfor "kmirror new->old to own the partition" '[ "$(curl -s http://127.0.0.1:9104/metrics | awk '"'"'$1 == "kmirror_owned_partitions" {print $2}'"'"')" = 1 ]'
step produce-60-new 'for i in $(seq 0 59); do echo "k$((i % 10)):new-$i"; done | kafka-console-producer --bootstrap-server $NEW --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --property parse.key=true --property key.separator=: --producer-property acks=all'


# 5. The consumer cutover.
step cutover "kreconcile groups --mm2-config mm2.properties --flow 'old->new' --group 'test-consumer-kafkaupgrade-.*' --follow --apply --backup cutover.json --interval 2s --timeout 5m"
step consume-new-50 'kafka-console-consumer --bootstrap-server $NEW --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --group test-consumer-kafkaupgrade-109 --max-messages 50 --isolation-level read_committed --consumer-property max.poll.records=1 >new-read.txt; sed -n "1p;\$p" new-read.txt; wc -l <new-read.txt'

# 6. Failback.
waitfor "kmirror new->old to copy the 60 new records" '[ "$(kafka-console-consumer --bootstrap-server $OLD --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --from-beginning --timeout-ms 5000 2>/dev/null | wc -l)" = 210 ]'
step failback-plan "kreconcile groups --mm2-config mm2.properties --flow 'new->old' --group test-consumer-kafkaupgrade-109"
step failback-apply "kreconcile groups --mm2-config mm2.properties --flow 'new->old' --group test-consumer-kafkaupgrade-109 --apply --backup failback.json"
step consume-old-rest 'kafka-console-consumer --bootstrap-server $OLD --topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW --group test-consumer-kafkaupgrade-109 --isolation-level read_committed --timeout-ms 15000 --consumer-property max.poll.records=1 >back-read.txt; sed -n "1p;\$p" back-read.txt; wc -l <back-read.txt'
step counts 'cat old-read.txt new-read.txt back-read.txt | wc -l; cat old-read.txt new-read.txt back-read.txt | sort | uniq -d | wc -l; diff <(cat old-read.txt new-read.txt back-read.txt) <(seq 0 149 | sed s/^/old-/; seq 0 59 | sed s/^/new-/) && echo "every record once, in order"'
stop "$rev"
echo "cutover-walkthrough: done; transcripts in $out"
