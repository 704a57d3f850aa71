// Command kcluster keeps Kafka clusters running for scripts/cluster.sh, with the same
// provider code as the tests (integration/cluster): one recipe for brokers.
//
//	kcluster -dir RUNDIR [-brokers N] [-acls] VERSION...
//
// It starts one cluster per VERSION (2.3.0, 3.7.1, 4.3.1 or kfake) with its data and logs in
// RUNDIR/kafka-<version>, writes RUNDIR/clusters (one line per cluster: name, version,
// brokers, bootstrap, directory, JVM pids) and then RUNDIR/ready, and runs until SIGTERM or
// SIGINT, when it kills every JVM it started and removes RUNDIR/ready and RUNDIR/clusters. If
// it dies anyway, its JVMs die with it (they are started with a parent-death signal).
//
// Exit codes: 0 after a signal, 1 when a cluster could not start, 2 for bad arguments.
package main
