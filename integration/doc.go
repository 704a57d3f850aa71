// Package integration holds kmigrate's end-to-end tests on real brokers: Kafka 2.3.0 on
// ZooKeeper, 3.7.1 and 4.3.1 on KRaft and MirrorMaker 2 3.7.1, started by the cluster
// sub-package. docs/testing.md says what each suite proves.
//
// Run them with
//
//	go test ./integration/ -v                      # everything (docs/testing.md: how long)
//	go test -short ./integration/                  # kfake and unit tests only
//	go test ./integration/ -run SeedScenario -v    # the seed case, prints its 3 numbers
//	KMIGRATE_LOGDIR=/tmp/kmlogs go test ./integration/ -run RoundTrip -v   # keep every log
//
// They need Java 17 and the Kafka jars that scripts/fetch-kafka.sh resolves with Maven into
// ~/.cache/kmigrate (fetched on first use). Without Java 17, or without Maven while the jars
// are missing, the tests skip saying why; KMIGRATE_REQUIRE_REAL=1 (CI) makes that a failure.
// TestMain reaps JVMs left by an earlier killed run and prints which provider runs.
//
// # Version pairs
//
// The suites that migrate from one cluster to another run Kafka 2.3.0 as the source and 3.7.1
// as the target, what CI runs. KMIGRATE_PAIR=source-target (pair_test.go, bedPair) picks
// another pair: 2.3.0-3.7.1 (the default), 2.3.0-4.3.1, 3.7.1-4.3.1 or 4.3.1-4.3.1; any other
// value fails the tests that read it, naming these. The verify suites (TestVerify,
// TestVerifyNothingToCompare, TestVerifyAll, TestVerifyState, TestDigest, TestPreflight),
// the reconcile ones (TestReconcileSeed, TestReconcileCases, TestReconcileRollbackSafety,
// TestACLs, TestACLsSecure3, TestSecureBed), TestMirror, TestMirrorSafety, TestCutover,
// TestRoundTrip, the isolation tests (TestIsolationAfterKill, TestIsolationAfterKillMM2EOS,
// whose MirrorMaker 2 is the target's release) and the application tests (TestStreamsAppMoved,
// its MirrorMaker 2 the target's too; TestCompactedTopicMoved) follow it; elsewhere MirrorMaker 2 stays 3.7.1.
// A test that needs what only one source has skips on the other pairs saying why:
// TestReconcileSeed needs the seed fixture's 2.3.0 source, and TestMirrorSafety's case of a
// source without topic IDs a 2.3.0 one.
// TestMirrorKafka4 skips on 2.3.0-4.3.1, which TestMirror then runs. The opt-in fault suite
// TestProdFaults follows it too. Tests written for one pair on purpose (TestReconcile371To371,
// the KIP-848 and seed tests, the tool fault, growth and container suites) do not read it.
//
//	KMIGRATE_PAIR=3.7.1-4.3.1 go test ./integration/ -run 'TestVerify$|TestVerifyAll|TestReconcileCases|TestMirror$' -v
//
// # The seed fixture
//
// runSeedScenario(t) *SeedFixture (seed_test.go) is the case every design decision is
// checked against, for reuse by other tests (reconcile): a 2.3.0 source and a 3.7.1 target
// with one broker each, MirrorMaker 2 running with the user's mm2.properties
// (testdata/seed-mm2.properties, the user's file verbatim; seedProperties changes only the
// addresses, every replication factor to 1 and every 10 s interval to 2 s: offset.max.lag=1
// is kept, so offset.lag.max is MM2's default 100, and the worker's offset.flush.interval.ms
// keeps its default 60 s), topic GEN.LAB.P.TEST.TESTINFO.OLD2NEW (one partition), group
// test-consumer-kafkaupgrade-109.
//
// The group consumes 120 records while they are produced (20 a second), commits after each
// poll, and stops (leaves the group); then 30 more records are produced. MM2 writes offset
// syncs 0->0 (first record) and 101->101 (offset.lag.max), and no other before its first
// flush, 60 s after its task started, so it translates G=120 to 102. runSeedScenario returns
// when MM2 has mirrored all 150 records, checkpointed G (or a commit on the way whose
// translation G shares: MM2 emits a checkpoint only when its downstream offset grows) and
// written the target group: SourceLag 30, TargetLag 48, Reread 18 (by content), MM2 running.
//
// Fields: Source, Target (cluster.Cluster), MM2 (*cluster.MM2), Topic, Group, Consumed and
// Unconsumed (the unique values the group did and did not consume, in order), SourceLag,
// TargetLag, Reread, SourceCommitted (G), TargetCommitted, Checkpoint, OffsetSyncs,
// MM2Properties. The numbers depend on the first flush coming after the scenario: on a
// machine so slow that phase 1 takes a minute they change, and the test says so.
//
// # Helpers
//
// main_test.go has helpers named bed* that every test file of the package may use: the
// shared pair (bedSharedPair: a source and a target of $KMIGRATE_PAIR started once per run,
// for the tests that leave brokers whole, run no MirrorMaker 2 and create their own topics
// and groups: TestVerifyNothingToCompare, TestDigest, TestReconcileRollbackSafety,
// TestRoundTrip, TestMirrorSafety), clients and topics (bedClient, bedAdmin, bedCreateTopic,
// bedUnique, bedProduce), reading (bedEndOffsets, bedReadPartition), waiting for a condition
// with a deadline (bedCtx, bedWaitFor), our binaries (bedBuild, bedRun, bedOutput), MM2
// configuration (bedProperties, bedFlow), and bedReport, which drops a result's HTML, JUnit
// and JSON reports into $KMIGRATE_REPORT_DIR for the nightly job.
//
// # Faults during mirroring
//
// prod_faults_test.go is the fault suite on 3+3 brokers (TestProdFaults, opt-in
// KMIGRATE_PROD_FAULTS=1, make it-prod; docs/faults.md has the method and the figures): every
// connection of the mirrors goes through a loopback fault proxy (cluster.Spec.Proxied,
// internal/netfault) while producers and checks use the direct listeners (pfDirect), so a
// fault only ever cuts the mirrors off. kmirror, MM2 and MM2 with exactly-once run side by
// side, a lane each (pfLane). Each fault's records are diffed by verify.Diff and an idle
// group is planned by reconcile.Plan. TestProdFaultsHarness runs the machinery on kfake.
//
// unreplicated_tail_test.go is mirror/doc.go's unreplicated tail (TestUnreplicatedTail): a
// 3-broker 3.7.1 target whose partition-0 followers are frozen (cluster.Pauser) while the
// leader takes kmirror's records, kmirror killed -9 there, the leader killed too or kept.
//
// # Benchmarks
//
// They run only with KMIGRATE_BENCH=1 (scripts/bench.sh, make bench, make bench-quick) and
// report ratios against a peer in the same run; they assert nothing about speed:
// TestMirrorBenchProd (production shape), TestMirrorLatency, TestMirrorBench (200-byte
// records, with and without the fence), the growth and start-up tests. Each contender's own
// CPU and peak RSS are measured (internal/peakrss). Method and figures: docs/benchmarks.md.
package integration
