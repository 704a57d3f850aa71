package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// Engine mirrors one flow. Build it with New, run it with Run; it implements
// offsetmap.Translator for the partitions it currently owns.
type Engine struct {
	cfg Config
	log *slog.Logger

	srcOpts, dstOpts []kgo.Opt
	src, dst         *kgo.Client
	srcAdm, dstAdm   *kadm.Client
	srcCl            *kgo.Client // srcAdm's client: source reads that are no group's (resume checks)

	mu     sync.Mutex
	parts  map[tp]*partState
	topics map[string]int // mirrored source topics and their partition counts

	// txn creates, fences and closes the buckets' transactional writers, and holds the
	// partitions being revoked (txn.go).
	txn *writers
	// resumer resumes newly assigned partitions from the target's truth (resume.go).
	resumer *resumer
	// commits decides when each bucket commits and commits it, with the map records that
	// describe its records (commit.go).
	commits *committer
	// buckets is the flow's split into buckets (bucket.go): the bucket count and each
	// partition's bucket.
	buckets bucketScheme

	dstOnce sync.Once

	fatalOnce sync.Once
	fatal     chan error    // the first fatal error, put back by whoever reads it
	failed    chan struct{} // closed at the first fatal error

	metrics *metrics
	health  health // health.go: what /readyz answers
	// stallAfter is how long an owned partition may not move, with records in flight or the
	// source ahead, before a warning says what it waits for. Default: 30s.
	stallAfter time.Duration
	// drainTimeout bounds the whole drain at stop (drain). Default: the constant of the same
	// name; tests shorten it. The commit bound is committer.timeout (commit.go).
	drainTimeout time.Duration
	// crashed makes the engine stop like a killed process: no wait for in-flight records and
	// no persist on revoke or at the end (tests set it through export_test.go).
	crashed atomic.Bool

	// testHooks run at group callbacks (tests set them through export_test.go).
	testHooks struct{ beforeResume, duringRevoke func() }

	stopped stopSet     // stopped partitions and the safety loop's queue (halt.go)
	ident   identities  // the topic identities the identity check compares with (identity.go)
	limits  topicLimits // the target topics' max.message.bytes (recsize.go)

	boot    startup                     // start-up phase times (startup.go)
	access  *accessCheck                // the preflight and what it found (access.go); set by connect
	leaders atomic.Pointer[resumeReads] // one resume's leader caches and prefetched reads (startup_read.go)
	hb      *heartbeater                // MM2's heartbeats on the target (heartbeat.go); nil when none are emitted
}

// New checks cfg and prepares an engine. srcOpts and dstOpts connect to the source and the
// target cluster (seeds, TLS, SASL: mm2.Cluster.Opts); the engine adds its own options.
func New(cfg Config, srcOpts, dstOpts []kgo.Opt, log *slog.Logger) (*Engine, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kmirror configuration: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("flow", cfg.SourceAlias+"->"+cfg.TargetAlias)
	e := &Engine{
		cfg:     cfg,
		log:     log,
		srcOpts: srcOpts,
		dstOpts: dstOpts,
		parts:   map[tp]*partState{},
		topics:  map[string]int{},
		fatal:   make(chan error, 1),
		failed:  make(chan struct{}),

		stallAfter:   30 * time.Second,
		drainTimeout: drainTimeout,
	}
	e.metrics = newMetrics(e)
	e.buckets = newBucketScheme(&e.cfg)
	e.txn = &writers{
		cfg: &e.cfg, scheme: e.buckets, log: log, metrics: e.metrics,
		opts: e.producerOpts, owner: e.part, fail: e.fail, failed: e.failed,
		fenceWarn: fenceWarnEvery,
		revoking:  map[*partState]struct{}{},
		buckets:   map[int]*bucket{},
	}
	e.commits = &committer{
		cfg: &e.cfg, log: log, metrics: e.metrics, txn: e.txn,
		owned: e.owned, stopped: e.crashed.Load, fail: e.fail,
		policy: newCommitPolicy(cfg.CommitLatency), timeout: commitTimeout,
	}
	e.resumer = &resumer{
		resumeHost: e, cfg: &e.cfg, log: log, buckets: e.buckets,
		txn: e.txn, commits: e.commits, boot: &e.boot,
	}
	return e, nil
}

// Config returns the engine's configuration after defaults.
func (e *Engine) Config() Config { return e.cfg }

// Run mirrors until ctx is done or a fatal error occurs. On ctx done it drains: it stops
// fetching, waits for every produced record, persists the offset map and leaves the group,
// so that another process resumes exactly where this one stopped.
func (e *Engine) Run(ctx context.Context) error {
	e.boot.begin(time.Now())
	e.health.setRunning(false, "starting: connecting to both clusters and preparing the topics")
	if err := e.connect(ctx); err != nil {
		return err
	}
	e.boot.mark("connect")
	defer e.closeDst()
	defer e.srcAdm.Close()
	topics, err := e.sourceTopics(ctx)
	if err != nil {
		return err
	}
	e.boot.mark("source_topics")
	logTopics(e.log, topics)
	var gs *groupSyncer
	if e.cfg.SyncGroupOffsets || e.cfg.EmitCheckpoints {
		if gs, err = e.groupSync(); err != nil {
			return err
		}
	}
	// Nothing is written before the principal's operations are checked (access.go).
	if err := e.access.check(ctx, topics, gs); err != nil {
		if gs != nil {
			gs.close()
		}
		return err
	}
	e.setupHeartbeats(ctx)
	e.boot.mark("access_check")
	e.mu.Lock()
	e.topics = topics
	e.mu.Unlock()
	// The target's topics are made ready while the group is joined (startup.go); the
	// assignment callback waits for them.
	e.prepareTarget(ctx, topics)
	defer e.waitPrepared(context.Background())
	if e.src, err = e.newConsumer(topics); err != nil {
		if gs != nil {
			gs.close()
		}
		return err
	}
	e.boot.mark("consumer")
	bg := e.startLoops(ctx, gs)
	defer bg.closeGroupSync()
	e.health.setRunning(true, "")

	e.log.Info("kmirror started", "group", e.cfg.GroupID, "fencing", e.cfg.Fencing, "topics", len(topics),
		"map_topic", e.cfg.MapTopic, "offset_syncs_topic", e.offsetSyncsTopic())
	if e.cfg.Fencing == FenceNone {
		e.log.Warn(fenceNoneWarning, "group", e.cfg.GroupID, "setting", e.cfg.TargetAlias+".exactly.once.source.support=disabled")
	} else {
		e.log.Info(readCommittedNotice, "cluster", e.cfg.TargetAlias, "topics", len(topics))
	}
	runErr := e.poll(ctx)
	e.drain(ctx, bg)
	if runErr != nil {
		return runErr
	}
	select {
	case err := <-e.fatal:
		return err
	default:
	}
	e.log.Info("kmirror stopped")
	return nil
}

// newConsumer is the source client of Run: a member of the engine's consumer group, for
// assignment only (nothing is committed on the source), reading committed records and the
// transaction markers, never resetting an out-of-range offset by itself.
//
// With Config.InstanceID the process is a static member: franz-go then sends no LeaveGroup
// when it stops (its partitions wait for its return until its session times out).
func (e *Engine) newConsumer(topics map[string]int) (*kgo.Client, error) {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	metaAge := time.Minute
	if e.cfg.RefreshTopics && e.cfg.RefreshTopicsInterval > 0 {
		metaAge = min(max(e.cfg.RefreshTopicsInterval, 100*time.Millisecond), time.Minute)
	}
	opts := append(append([]kgo.Opt(nil), e.srcOpts...),
		kgo.ConsumerGroup(e.cfg.GroupID),
		kgo.Balancers(e.balancer()),
		kgo.DisableAutoCommit(),
		kgo.ConsumeTopics(names...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), // out of range is checked, never reset silently (identity.go)
		kgo.FetchMaxBytes(e.cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(e.cfg.FetchMaxPartitionBytes),
		kgo.FetchMaxWait(e.cfg.FetchMaxWait),
		kgo.SessionTimeout(e.cfg.SessionTimeout),
		kgo.RebalanceTimeout(rebalanceTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, e.cfg.SessionTimeout/3)),
		kgo.AdjustFetchOffsetsFn(e.onAssigned),
		kgo.OnPartitionsAssigned(e.onSessionAssigned), // health.go
		kgo.OnPartitionsRevoked(e.onSessionRevoked),
		kgo.OnPartitionsLost(e.onSessionLost),
		e.metrics.clientHooks(roleSource, true),
		// The group notices new source partitions at a metadata refresh.
		kgo.MetadataMaxAge(metaAge),
		kgo.MetadataMinAge(min(metaAge, 5*time.Second)),
	)
	if e.cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(e.cfg.InstanceID))
	}
	src, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: create consumer: %w", e.cfg.SourceAlias, err)
	}
	return src, nil
}

// rebalanceTimeout is how long the source group waits, in a rebalance, for its members to
// join again and to take their assignment (rebalance.timeout.ms). Members that do not are
// removed from the round, so it is also how long a rebalance waits for a member that died
// without leaving (kill -9, a crash loop) before it goes on without it: franz-go's default,
// 60 s, puts minutes between a crash-looping process's start and its partitions. A live member
// rejoins once its revoke committed its in-flight records, which takes well under this; one
// that takes longer is removed, and the bucket's next owner fences it.
const rebalanceTimeout = 15 * time.Second

// background are the loops Run starts beside the data path: commits, stall warnings, refresh,
// safety and, when configured, group offset sync.
type background struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	gs     *groupSyncer // nil without group offset sync or checkpoints
}

// startLoops starts the background loops. gs, when not nil, is the group sync built by Run,
// which the background now owns.
func (e *Engine) startLoops(ctx context.Context, gs *groupSyncer) *background {
	loops, cancel := context.WithCancel(ctx)
	bg := &background{cancel: cancel}
	bg.wg.Go(func() { e.commits.run(loops) }) // commit.go
	bg.wg.Go(func() { e.stallLoop(loops) })
	bg.wg.Go(func() { e.refreshLoop(loops) })
	bg.wg.Go(func() { e.safetyLoop(loops) }) // halt.go
	if e.hb != nil {
		bg.wg.Go(func() { e.hb.run(loops) }) // heartbeat.go
	}
	if gs != nil {
		bg.gs = gs
		bg.wg.Go(func() { e.groupSyncLoop(loops, gs) })
	}
	return bg
}

// stop ends the loops and waits for them.
func (bg *background) stop() {
	bg.cancel()
	bg.wg.Wait()
}

func (bg *background) closeGroupSync() {
	if bg.gs != nil {
		bg.gs.close()
	}
}

// drain stops the engine after poll returned. Leaving the group revokes every partition, which
// waits for in-flight records and persists the map (onRevoked); the producer stays open until
// then. Then the loops stop, background commits end, the map is persisted a last time and the
// transactional writers close.
func (e *Engine) drain(ctx context.Context, bg *background) {
	e.health.setRunning(false, "draining: stopping")
	drain, cancelDrain := context.WithTimeout(context.WithoutCancel(ctx), e.drainTimeout)
	defer cancelDrain()
	// If the target does not take the in-flight records within the drain time, closing the
	// producer fails them, so the revoke callbacks return and the process can stop; the map
	// only holds acknowledged records, and the next start reconciles the target's tail.
	drained := make(chan struct{})
	go func() {
		select {
		case <-drained:
		case <-time.After(e.drainTimeout + 5*time.Second):
			e.log.Warn("drain timed out: failing in-flight records", "cluster", e.cfg.TargetAlias)
			e.closeWriters()
			e.closeDst()
		}
	}()
	if err := e.src.LeaveGroupContext(drain); err != nil {
		e.log.Warn("leave group", "group", e.cfg.GroupID, "err", err)
	}
	e.src.Close()
	close(drained)
	bg.stop()
	e.commits.wait()
	if !e.crashed.Load() {
		if err := e.commits.persist(drain, e.owned()); err != nil {
			e.log.Warn("persist offset map at stop", "cluster", e.cfg.TargetAlias, "topic", e.cfg.MapTopic, "err", err)
		}
	}
	e.closeWriters()
}

// readCommittedNotice tells, at start in fenced mode, what target consumers must do: the
// copies of a crashed or fenced owner's open transaction stay in the target's log as aborted
// records, which only read_committed consumers skip.
const readCommittedNotice = "target consumers must read with isolation.level=read_committed: " +
	"kmirror writes in transactions, and after a crash or a fenced owner the records of its open transaction stay in the target's log, aborted, and are mirrored again after them; " +
	"a read_uncommitted consumer (the default of Kafka's Java client and console consumer) reads those aborted copies as duplicates. " +
	"Check a consumer's setting; kafka-console-consumer reads as read_committed with --isolation-level read_committed"

// drainTimeout bounds the drain at stop: leaving the group, which waits for in-flight records.
const drainTimeout = 30 * time.Second

func (e *Engine) closeDst() { e.dstOnce.Do(e.dst.Close) }

func (e *Engine) offsetSyncsTopic() string {
	if e.cfg.OffsetSyncsOnTarget {
		return e.cfg.OffsetSyncsTopic
	}
	return ""
}

// connect builds the clients and checks that both clusters answer.
func (e *Engine) connect(ctx context.Context) error {
	dst, err := kgo.NewClient(append(e.producerOpts(), e.metrics.clientHooks(roleTarget, true))...)
	if err != nil {
		return fmt.Errorf("target cluster %s: create producer: %w", e.cfg.TargetAlias, err)
	}
	srcAdmCl, err := kgo.NewClient(append(append([]kgo.Opt(nil), e.srcOpts...), kgo.MetadataMinAge(500*time.Millisecond),
		e.metrics.clientHooks(roleSourceAdmin, true))...)
	if err != nil {
		dst.Close()
		return fmt.Errorf("source cluster %s: create client: %w", e.cfg.SourceAlias, err)
	}
	e.dst, e.dstAdm, e.srcCl, e.srcAdm = dst, kadm.NewClient(dst), srcAdmCl, kadm.NewClient(srcAdmCl)
	e.txn.dst, e.commits.dst = dst, dst
	e.resumer.dst, e.resumer.dstAdm, e.resumer.srcCl, e.resumer.srcAdm = dst, e.dstAdm, srcAdmCl, e.srcAdm
	e.access = &accessCheck{cfg: &e.cfg, srcCl: e.srcCl, srcAdm: e.srcAdm, dst: e.dst, dstAdm: e.dstAdm, dstOpts: e.dstOpts}
	// Both clusters are asked at once; the source's failure is reported first, as before.
	sides := []struct {
		side, alias string
		adm         *kadm.Client
		err         error
	}{{side: "source", alias: e.cfg.SourceAlias, adm: e.srcAdm}, {side: "target", alias: e.cfg.TargetAlias, adm: e.dstAdm}}
	var wg sync.WaitGroup
	for i := range sides {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, e.cfg.ConnectTimeout)
			defer cancel()
			_, sides[i].err = sides[i].adm.BrokerMetadata(pctx)
		})
	}
	wg.Wait()
	for _, c := range sides {
		if c.err != nil {
			e.srcAdm.Close()
			dst.Close()
			return fmt.Errorf("%s cluster %s is unreachable: %w%s; check its bootstrap.servers and security settings",
				c.side, c.alias, c.err, hint(c.err))
		}
	}
	return nil
}

// producerOpts are the options of every producer to the target: the engine's shared one and
// the transactional ones of the buckets.
func (e *Engine) producerOpts() []kgo.Opt {
	return append(append([]kgo.Opt(nil), e.dstOpts...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(mustCompression(e.cfg.Compression)),
		kgo.ProducerLinger(max(e.cfg.Linger, 0)),
		kgo.ProducerBatchMaxBytes(e.cfg.BatchMaxBytes),
		kgo.MaxBufferedRecords(e.cfg.MaxBufferedRecords),
		kgo.UnknownTopicRetries(20),
		// kadm answers from cached metadata up to this age: keep it short so that topics
		// kmirror just created are seen at once.
		kgo.MetadataMinAge(500*time.Millisecond),
	)
}

func mustCompression(s string) kgo.CompressionCodec {
	c, _ := compression(s) // Validate checked it
	return c
}

// fail records the first fatal error and stops Run.
func (e *Engine) fail(err error) {
	e.fatalOnce.Do(func() {
		e.log.Error("kmirror stopping on error", "err", err)
		e.fatal <- err
		close(e.failed)
	})
}

// poll is the data path: fetch from the source, produce to the same partition of the target
// topic, in order. Memory is bounded by the fetch sizes and MaxBufferedRecords (Produce blocks
// when the buffer is full).
func (e *Engine) poll(ctx context.Context) error {
	pctx := context.WithoutCancel(ctx) // produced records are never cancelled half-way: drain waits for them
	// PollRecords waits for records or its context, so a fatal error (a failed produce, a
	// resume that gave up) ends the context too: otherwise Run would not stop until the
	// source had another record.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.failed:
			cancel()
		case <-ctx.Done():
		}
	}()
	fatal := func() error { // nil when there is none
		select {
		case err := <-e.fatal:
			e.fatal <- err
			return err
		default:
			return nil
		}
	}
	for {
		if err := fatal(); err != nil {
			return err
		}
		fs := e.src.PollRecords(ctx, 5000)
		if ctx.Err() != nil {
			return fatal()
		}
		if fs.IsClientClosed() {
			return nil
		}
		fs.EachError(e.fetchFailed)
		if !fs.Empty() {
			e.boot.fetchedOnce()
		}
		now := time.Now()
		fs.EachPartition(func(fp kgo.FetchTopicPartition) { e.copyFetched(pctx, fp, now) })
	}
}

// fetchFailed handles a fetch error of one source partition: an out-of-range offset goes to
// identity.go, an authorization or authentication failure stops the engine, anything else is
// logged (franz-go retries it).
func (e *Engine) fetchFailed(t string, p int32, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	e.metrics.fetchErrors.Inc()
	if e.onFetchError(t, p, err) { // identity.go: out of range
		return
	}
	if isFatal(err) {
		e.fail(fmt.Errorf("source cluster %s: fetch topic %s partition %d: %w%s", e.cfg.SourceAlias, t, p, err, hint(err)))
		return
	}
	if errors.Is(err, kerr.InconsistentGroupProtocol) {
		e.fail(e.protocolErr(err))
		return
	}
	e.log.Warn("fetch error", "cluster", e.cfg.SourceAlias, "topic", t, "partition", p, "err", err)
}

// copyFetched produces the records fetched from one owned source partition to the same
// partition of its target topic, in order, through its bucket's transactional writer when
// it has one. pctx is never cancelled half-way (poll).
func (e *Engine) copyFetched(pctx context.Context, fp kgo.FetchTopicPartition, now time.Time) {
	ps := e.part(tp{fp.Topic, fp.Partition})
	if ps == nil {
		return
	}
	ps.mu.Lock()
	ps.hwm = fp.HighWatermark
	ps.mu.Unlock()
	if e.isStopped(ps.tp) { // halt.go
		return
	}
	lim := e.recordLimit(ps.target) // recsize.go
	// The commit policy counts a pause of the bucket's flow from here: a poll's partitions are
	// copied one after the other, so the poll's time would end a pause early.
	at := time.Now()
	for _, r := range fp.Records {
		control := r.Attrs.IsControl()
		if !control && e.tooLarge(ps, r, lim) { // recsize.go: stops the partition at r
			break
		}
		if !ps.begin(r.Offset, control, now) {
			continue
		}
		out := copyRecord(r, ps.target)
		src, ts := r.Offset, r.Timestamp
		size := int64(len(r.Key) + len(r.Value))
		promise := func(o *kgo.Record, err error) {
			ps.acked(src, o.Offset, err)
			if err != nil {
				e.produceFailed(ps, src, err)
				return
			}
			e.metrics.acked(size, ts, time.Now())
			e.produced() // startup.go
		}
		if ps.w != nil {
			ps.w.produce(pctx, out, at, &ps.txnSeen, promise)
		} else {
			e.dst.Produce(pctx, out, promise)
		}
	}
	// Records left on the source after this fetch: the bucket's flow is not pausing.
	if n := len(fp.Records); ps.w != nil && n > 0 && fp.Records[n-1].Offset+1 < stableEnd(fp) {
		ps.w.fetchedBehind(at)
	}
}

// stableEnd is where a read_committed reader's log ends in fp: the last stable offset when the
// broker gave one, else the high watermark.
func stableEnd(fp kgo.FetchTopicPartition) int64 {
	if fp.LastStableOffset >= 0 {
		return fp.LastStableOffset
	}
	return fp.HighWatermark
}

// produceFailed handles a record the target did not take: a fenced partition stops quietly
// (another process owns it now); anything else stops the engine, and a restart resumes from
// the target's truth.
func (e *Engine) produceFailed(ps *partState, src int64, err error) {
	e.metrics.prodErrors.Inc()
	if ps.w != nil && (isFencedErr(err) || errors.Is(err, kgo.ErrAborting)) {
		e.txn.fenced(ps, err)
		return
	}
	e.fail(fmt.Errorf("target cluster %s: produce to topic %s partition %d (source offset %d): %w%s",
		e.cfg.TargetAlias, ps.target, ps.partition, src, err, hint(err)))
}

// copyRecord copies r for the target into one allocation. Fetched keys and values point into
// the fetch response; copying them lets each response be freed once polled, so memory is
// bounded by the fetch size plus the producer buffer rather than by every response that still
// has a record waiting to be acknowledged.
func copyRecord(r *kgo.Record, topic string) *kgo.Record {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	buf := make([]byte, 0, n)
	take := func(b []byte) []byte {
		if b == nil {
			return nil // null stays null
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	out := &kgo.Record{Topic: topic, Partition: r.Partition, Timestamp: r.Timestamp}
	out.Key = take(r.Key)
	out.Value = take(r.Value)
	if len(r.Headers) > 0 {
		out.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			out.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: take(h.Value)}
		}
	}
	return out
}

func (e *Engine) part(t tp) *partState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.parts[t]
}

// onAssigned resumes every newly assigned partition from the target's truth and returns the
// source offsets to fetch from. It runs before fetching starts; franz-go cancels ctx when the
// session is revoked before it finishes.
func (e *Engine) onAssigned(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	var assigned []tp
	topics := map[string]int{}
	for t, ps := range offsets {
		for p := range ps {
			assigned = append(assigned, tp{t, p})
			topics[t] = max(topics[t], int(p)+1)
		}
	}
	if len(assigned) == 0 {
		return offsets, nil
	}
	e.boot.mark("group_join")
	if err := e.waitPrepared(ctx); err != nil { // startup.go: Run stops on its error
		return nil, err
	}
	if e.testHooks.beforeResume != nil {
		e.testHooks.beforeResume()
	}
	sort.Slice(assigned, func(i, j int) bool {
		return assigned[i].topic < assigned[j].topic || assigned[i].topic == assigned[j].topic && assigned[i].partition < assigned[j].partition
	})
	out := map[string]map[int32]kgo.Offset{}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			e.log.Warn("resume failed, retrying", "attempt", attempt, "err", err)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		if err = e.ensureTargets(ctx, topics); err != nil {
			continue
		}
		e.boot.mark("ensure_targets")
		var states []*partState
		if states, err = e.resumer.resume(ctx, assigned); err != nil {
			continue
		}
		e.producerSees(ctx, states)
		e.boot.mark("producer_metadata")
		e.mu.Lock()
		e.txn.attach(states)
		for _, ps := range states {
			e.parts[ps.tp] = ps
			if out[ps.topic] == nil {
				out[ps.topic] = map[int32]kgo.Offset{}
			}
			out[ps.topic][ps.partition] = kgo.NewOffset().At(ps.next).WithEpoch(-1)
		}
		e.mu.Unlock()
		for _, ps := range states {
			e.log.Info("partition assigned", "topic", ps.topic, "partition", ps.partition, "offset", ps.next,
				"target_offset", ps.pm.TargetTo, "segments", len(ps.pm.Segments))
		}
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	e.fail(fmt.Errorf("resume assigned partitions: %w", err))
	return nil, err
}

// producerSees waits (up to 10s) until the producer's metadata knows the target partitions of
// states: a target topic the producer loaded before it grew would otherwise fail records for
// the new partitions. A topic the producer has not loaded yet is loaded whole at its first
// record.
func (e *Engine) producerSees(ctx context.Context, states []*partState) {
	deadline := time.Now().Add(10 * time.Second)
	for _, ps := range states {
		for {
			if l, _, _ := e.dst.PartitionLeader(ps.target, 0); l < 0 {
				break // not loaded yet
			}
			if l, _, _ := e.dst.PartitionLeader(ps.target, ps.partition); l >= 0 || time.Now().After(deadline) {
				break
			}
			e.dst.ForceMetadataRefresh()
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// onRevoked stops the revoked partitions, waits for their in-flight records and persists
// their maps before returning, so that the next owner starts from a complete map.
func (e *Engine) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if e.crashed.Load() {
		return
	}
	states := e.takeRevoked(revoked)
	defer e.txn.revokeDone(states)
	e.forgetStops(revoked) // halt.go
	// The records in flight are waited for within the commit bound: a partition being revoked
	// is no longer owned, so no commit of it bounds a target that never acknowledges them.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), e.commits.timeout)
	defer rcancel()
	for _, ps := range states {
		err := ps.revoke(rctx)
		if stalled, ok := errors.AsType[*revokeStalled](err); ok {
			e.fail(e.revokeStalledErr(ps, stalled))
			continue
		}
		if err != nil && !isFencedErr(err) && !errors.Is(err, kgo.ErrAborting) {
			e.fail(err)
		}
	}
	if len(states) == 0 {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := e.commits.persist(pctx, states); err != nil {
		// Not fatal for correctness: the next owner finds the unpersisted tail on the target
		// (or, with transactions, mirrors the aborted ones again).
		e.log.Warn("persist offset map on revoke", "cluster", e.cfg.TargetAlias, "topic", e.cfg.MapTopic, "err", err)
	}
	for _, w := range e.txn.detach(states) {
		w.close()
	}
	for _, ps := range states {
		e.log.Info("partition revoked", "topic", ps.topic, "partition", ps.partition, "offset", ps.next)
	}
}

// protocolErr is the error of a join the source group refused because its members split
// the flow another way.
func (e *Engine) protocolErr(err error) error {
	how := fmt.Sprintf("fencing transactions with %d buckets (group protocol %s)", e.buckets.n, e.buckets.protocol())
	if e.cfg.Fencing == FenceNone {
		how = "fencing none (group protocol cooperative-sticky)"
	}
	return fmt.Errorf("source cluster %s: group %s refused this process: %w; it runs %s, and the group's members split the flow another way (another --fence-buckets, another exactly.once.source.support, or an earlier kmirror with one transactional id per partition). Run every process of the flow alike, or stop the others first: the next start then fences what they wrote",
		e.cfg.SourceAlias, e.cfg.GroupID, err, how)
}

// balancer is the source group's balancer: whole buckets with fencing transactions
// (bucketBalancer), cooperative-sticky partitions without.
func (e *Engine) balancer() kgo.GroupBalancer {
	if e.cfg.Fencing == FenceTransactions {
		return e.buckets.balancer()
	}
	return kgo.CooperativeStickyBalancer()
}

// revokeStalledErr is the error of a revoke of ps that the target did not let end within the
// commit bound, with the target's state of its transaction when it has one.
func (e *Engine) revokeStalledErr(ps *partState, st *revokeStalled) error {
	err := fmt.Errorf("target cluster %s: revoke of topic %s partition %d: the target did not acknowledge the %d records in flight within %s (the commit bound): %w; kmirror stops, and once restarted resumes from what the target committed",
		e.cfg.TargetAlias, ps.target, ps.partition, st.inflight, e.commits.timeout, st.cause)
	if ps.w != nil {
		err = e.txn.withTxnState(err, ps.w.id)
	}
	return err
}

// stallLoop warns of owned partitions that do not move (warnStalled).
func (e *Engine) stallLoop(ctx context.Context) {
	t := time.NewTicker(max(min(e.stallAfter/2, time.Second), 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			e.warnStalled(now)
		}
	}
}

// warnStalled logs every owned partition that has not moved for stallAfter although it has
// work: records the target has not acknowledged (franz-go retries a refusing target, such as
// one short of in-sync replicas for acks=all, without end and without a log of its own), or a
// source log end ahead of what was fetched (an open transaction holds records back, or the
// fetch is stuck).
func (e *Engine) warnStalled(now time.Time) {
	states := e.owned()
	for _, ps := range states {
		if e.isStopped(ps.tp) { // halt.go: reported at ERROR by the safety loop
			continue
		}
		st, ok := ps.stalled(now, e.stallAfter)
		if !ok {
			continue
		}
		cluster := e.cfg.TargetAlias
		if st.waitingFor == "source" {
			cluster = e.cfg.SourceAlias
		}
		e.log.Warn("partition not progressing", "topic", ps.topic, "partition", ps.partition,
			"waiting_for", st.waitingFor, "cluster", cluster, "in_flight", st.inflight, "lag", st.lag,
			"seconds", int64(st.since.Seconds()))
	}
}

// flowTopics is a copy of the mirrored source topics and their partition counts.
func (e *Engine) flowTopics() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.topics)
}

// owned lists the states of the partitions this process owns.
func (e *Engine) owned() []*partState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Collect(maps.Values(e.parts))
}

// takeRevoked moves the revoked partitions from parts to the writers' revoking set: the poll
// loop no longer routes records to them, and closeWriters still reaches their writers while
// the revoke waits.
func (e *Engine) takeRevoked(revoked map[string][]int32) []*partState {
	var states []*partState
	e.mu.Lock()
	defer e.mu.Unlock()
	for t, ps := range revoked {
		for _, p := range ps {
			if st, ok := e.parts[tp{t, p}]; ok {
				states = append(states, st)
				delete(e.parts, tp{t, p})
				e.txn.revoke(st)
			}
		}
	}
	return states
}

// closeWriters closes the transactional producers of every owned partition and of every
// partition being revoked (writers.closeAll), failing what they still hold: a revoke waiting
// for records a stalled target never acknowledges then returns.
func (e *Engine) closeWriters() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.txn.closeAll(e.parts)
}

// refreshLoop finds new topics and partitions and syncs topic configs.
func (e *Engine) refreshLoop(ctx context.Context) {
	var topicsC, configsC <-chan time.Time
	if e.cfg.RefreshTopics && e.cfg.RefreshTopicsInterval > 0 {
		t := time.NewTicker(e.cfg.RefreshTopicsInterval)
		defer t.Stop()
		topicsC = t.C
	}
	if e.cfg.SyncTopicConfigs && e.cfg.SyncTopicConfigsInterval > 0 {
		t := time.NewTicker(e.cfg.SyncTopicConfigsInterval)
		defer t.Stop()
		configsC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-topicsC:
			e.refreshTopics(ctx)
		case <-configsC:
			e.mu.Lock()
			topics := make(map[string]int, len(e.topics))
			for t, n := range e.topics {
				topics[t] = n
			}
			e.mu.Unlock()
			e.syncConfigs(ctx, topics)
		}
	}
}

// refreshTopics adds new matching source topics and grows target topics whose source grew.
// The group notices new partitions itself and rebalances; onAssigned grows the target first.
func (e *Engine) refreshTopics(ctx context.Context) {
	topics, err := e.sourceTopics(ctx)
	if err != nil {
		e.log.Warn("refresh topics", "err", err)
		return
	}
	if err := e.ensureTargets(ctx, topics); err != nil {
		e.log.Warn("refresh topics", "err", err)
		return
	}
	e.mu.Lock()
	var added []string
	for t, n := range topics {
		if _, ok := e.topics[t]; !ok {
			added = append(added, t)
		}
		e.topics[t] = n
	}
	e.mu.Unlock()
	if len(added) > 0 {
		sort.Strings(added)
		e.log.Info("new source topics", "topics", added)
		e.src.AddConsumeTopics(added...)
	}
}

// Translate implements offsetmap.Translator from the exact in-memory map.
func (e *Engine) Translate(topic string, partition int32, g int64) (offsetmap.Translation, bool) {
	ps := e.part(tp{topic, partition})
	if ps == nil {
		return offsetmap.Translation{}, false
	}
	tr := ps.translate(g)
	return tr, tr.Known
}

// Owned implements offsetmap.Translator.
func (e *Engine) Owned() map[string][]int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]int32{}
	for t := range e.parts {
		out[t.topic] = append(out[t.topic], t.partition)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

// Map returns a copy of the exact offset map of an owned partition, or false.
func (e *Engine) Map(topic string, partition int32) (offsetmap.PartitionMap, bool) {
	ps := e.part(tp{topic, partition})
	if ps == nil {
		return offsetmap.PartitionMap{}, false
	}
	return ps.snapshot(), true
}

var _ offsetmap.Translator = (*Engine)(nil)
