// Package cluster starts Kafka clusters and MirrorMaker 2 for kmigrate's end-to-end tests and
// for scripts/cluster.sh, behind one API whatever runs them.
//
// The types to know: [Spec] (version, broker count, provider), [Cluster] (bootstrap
// addresses; stop, kill -9 and restart one broker; Close), and [MM2] (a MirrorMaker 2 3.7.1
// process in dedicated mode, from [StartMM2]). Tests call [StartT] and [StartMM2T], which
// close what they start in t.Cleanup and print the tail of every log when the test failed;
// tests that can share a cluster take it from a [Shared], started by the first test that asks
// and closed by TestMain.
//
// Providers (Spec.Provider, else $KMIGRATE_PROVIDER, else "kfake" for Version "kfake" and
// "jvm" for "2.3.0", "3.7.1" and "4.3.1"):
//
//   - kfake: franz-go's in-process fake broker. Instant; StopBroker, KillBroker and
//     RestartBroker return [ErrNotSupported]. Not a JVM broker: never a substitute for the
//     real-broker tests.
//   - jvm: plain JVM processes from the jars that scripts/fetch-kafka.sh resolves with Maven
//     into $KMIGRATE_CACHE (default ~/.cache/kmigrate; fetched on first use, offline after).
//     2.3.0 runs on one ZooKeeper 3.5.9 node, 3.7.1 and 4.3.1 on KRaft with every node both
//     broker and controller (a static quorum: controller.quorum.voters, storage formatted with
//     one cluster id). 4.3.1 logs through log4j2, the others through log4j 1. Java 17 is
//     pinned ($JAVA_HOME, else /usr/lib/jvm/java-17-openjdk-amd64, else java on PATH).
//     [Pauser] freezes a broker (SIGSTOP to its process group) and thaws it (SIGCONT).
//   - testcontainers: the same clusters as containers on one Docker network, each broker's
//     client port published on 127.0.0.1 (the only way the tests reach them). The images are
//     the ones scripts/images.sh builds with no registry (kmigrate-local/...);
//     KMIGRATE_IMAGE_ZOOKEEPER, KMIGRATE_IMAGE_KAFKA_2_3_0, _3_7_1 and _4_3_1 name others,
//     e.g. confluentinc/cp-kafka 5.3.0 or apache/kafka:3.7.1. Nothing is ever pulled: a missing image is an [UnavailableError] that says how to build
//     it, as is a machine without an engine (within a second or two). MirrorMaker 2 runs in
//     KMIGRATE_IMAGE_MM2 on the host network under this provider (KMIGRATE_MM2_PROVIDER=jvm
//     keeps it a JVM). testcontainers' reaper (Ryuk, itself pulled from a registry) is off:
//     every container and network carries its starter's pid and start time, and [Reap]
//     removes those whose starter has ended. KillBroker sends SIGKILL; [Faulter] adds pause
//     and network disconnection.
//
// Class-data sharing (jvm provider): every JVM maps an archive of the classes its main class
// loaded on an earlier start ($KMIGRATE_CACHE/cds, one per version, main class, JDK and jars):
// a 3.7.1 broker starts in about 1.1 s and 1.7 s of CPU instead of 2.0 s and 2.9 s. The first
// start on a machine trains it (-XX:DumpLoadedClassList, then java -Xshare:dump in the
// background once that JVM is ready; one process at a time, under a lock file). The JVM checks
// an archive against its build and class path and runs without one where they differ; an
// archive changes how fast classes load, nothing else. KMIGRATE_CDS=off starts without.
//
// Broker settings of the jvm provider (Spec.Config overrides any): 127.0.0.1 at free ports,
// node ids index+1, num.partitions=1, auto.create.topics.enable=true (Kafka's default),
// replication factors min(brokers, 3), offsets and transaction topics with 10 partitions,
// group.initial.rebalance.delay.ms=0, heaps of 128 MiB to 512 MiB, serial GC.
//
// Secure bed (Spec.Secure, jvm provider only; [Secured], [SecurityOf]): 2.3.0 listens
// SASL_PLAINTEXT with SCRAM-SHA-256 (the admin's credentials written into ZooKeeper before
// any broker starts); 3.7.1 and 4.3.1 listen SASL_SSL with SCRAM-SHA-512 (the credentials in
// the first metadata records), with certificates from a CA generated in Go for 127.0.0.1 and
// localhost, so that host name verification passes. The KRaft controller listener is
// SASL_PLAINTEXT with PLAIN on the loopback. The authorizer is on with the admin as the only
// super user and allow.everyone.if.no.acl.found=false. AddUser creates users and waits until
// they log in; [Security.Opts], [Security.ClientProperties] and [MM2Properties] connect
// clients, Kafka's CLI tools and MirrorMaker 2. ZooKeeper has no authentication. From three
// brokers on every cluster has min.insync.replicas=2 and unclean.leader.election.enable=false.
//
// Proxied bed (Spec.Proxied, jvm provider, plaintext; [Proxied], [ProxiesOf]): every broker
// gets a loopback fault proxy (internal/netfault) in front of a CLIENT listener advertised at
// the proxy's port, and a direct INTERNAL listener for replication. Bootstrap lists the
// proxies, so the tools under test and every address they learn go through them; Direct
// lists the INTERNAL listeners, where a producer or a check never meets a fault. Readiness is
// probed through the proxies.
//
// Guarantees:
//   - Start returns only when a Kafka metadata request lists every broker and each answers
//     ApiVersions (ZooKeeper: its "ruok" command). Readiness never comes from reading logs.
//     A process that exits while starting fails Start at once, with its log tail.
//   - No JVM outlives its test: each runs in its own process group, dies with its parent
//     (Pdeathsig), and is listed in a pid registry ($KMIGRATE_CACHE/run/pids) that [Reap]
//     (called once by every process that starts a cluster, and by TestMain) uses to kill the
//     JVMs of a run that was itself killed. [CloseAll] is for signal handlers.
//   - Close kills rather than shuts down (the data is thrown away) and is idempotent.
//
// Skipping: StartT skips, saying why, when Java 17 is missing or the jars are missing and
// Maven is not there to fetch them; KMIGRATE_REQUIRE_REAL=1 (CI) turns that into a failure.
// A missing Docker engine or image skips; KMIGRATE_REQUIRE_CONTAINERS=1 (CI) makes that a
// failure too. go test -short skips every real cluster and MM2.
//
// Logs: every process appends its console (log4j at INFO, as log4j/ configures it here and in
// the local Kafka images) to a file in the cluster's directory (zookeeper/zookeeper.log,
// broker-<i>/broker.log, mm2.log). Under StartT that is t.TempDir, or a kept sub-directory of
// $KMIGRATE_LOGDIR when set.
//
// Tests: go test ./integration/cluster/ (2 to 3 minutes on 2 cores): every version, three
// brokers with kill -9, restart and stop, MirrorMaker 2 killed and restarted, the pid
// registry, the Docker probe, the Kafka 4.3.1 bed plain and secure.
package cluster
