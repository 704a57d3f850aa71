package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/kmigrate/kmigrate/offsetmap"
)

// resumer is the resume of newly assigned partitions: it fences their buckets' previous
// owners, reads the offset map and the target's committed tail and returns the partitions'
// states, ready to mirror from the next source offset. It owns nothing between resumes; what
// it reads with and what it asks of the engine it is given at New and connect: the clients,
// the bucket scheme, the writers (fence), the committer (the reconciled map without
// transactions), the start-up phase times and resumeHost.
type resumer struct {
	resumeHost
	cfg     *Config
	log     *slog.Logger
	buckets bucketScheme
	txn     *writers
	commits *committer
	boot    *startup

	// The clients of connect: the target's (dst, dstAdm) and the source's reads that are no
	// group's (srcCl, srcAdm).
	dst, srcCl     *kgo.Client
	dstAdm, srcAdm *kadm.Client
}

// resumeHost is what a resume asks of the engine: the identity checks (identity.go), the
// shared reads of one resume (startup_read.go, startup.go), the flow's source topics and the
// errors naming a cluster.
type resumeHost interface {
	prepareChecks(ctx context.Context, assigned []tp) (*resumeChecks, error)
	checkPartition(ctx context.Context, rc *resumeChecks, t tp, target string, pm offsetmap.PartitionMap, srcEnd, srcStart, dstEnd int64) (*partState, error)
	finishChecks(ctx context.Context, rc *resumeChecks) error
	prefetchResume(ctx context.Context, checks *resumeChecks, assigned []tp, persisted persistedMap, bounds resumeBounds)
	readResume(ctx context.Context, cl *kgo.Client, topic string, partition int32, from, end int64, committed bool, fn func(*kgo.Record) (bool, error)) error
	resetLeaders() *resumeReads
	endReads(rr *resumeReads)
	flowTopics() map[string]int
	clusterErr(side, alias, what string, err error) error
}

// resume rebuilds the state of newly assigned partitions from the target's truth:
//
//  1. the persisted offset map (the map topic, read to its end);
//  2. the target's tail: records after the last persisted segment were produced by a previous
//     owner that died before persisting them. They are the next source records in order (one
//     writer per partition, nothing skipped), so the tail is aligned with the source from the
//     persisted source end record by record, each pair checked by fingerprint. The map is
//     extended and consumption resumes at the next source offset: no gap, no duplicate.
//
// A partition never mirrored before gets an origin record (source start, target end) before
// its first record is produced, so that a crash before the first persist is also recovered.
//
// With transactional writers (Config.Fencing) the transactional id of each partition's bucket
// is initialised first (unless this process owns the bucket already), which fences its
// previous owner and aborts that owner's open transaction; only then is the target read, with read_committed (the map to its high watermark, see mapEnd; the
// partitions to their last stable offset), so what the previous owner did not commit is
// neither trusted nor kept: it is mirrored again.
func (rs *resumer) resume(ctx context.Context, assigned []tp) (_ []*partState, err error) {
	txn := rs.cfg.Fencing == FenceTransactions
	defer rs.endReads(rs.resetLeaders()) // startup.go: leaders looked up once for this resume's reads
	var writers map[int]*txnWriter
	var opened []*txnWriter
	if txn {
		if writers, opened, err = rs.fenceAll(ctx, assigned); err != nil {
			return nil, err
		}
		rs.boot.mark("fence")
		defer func() {
			if err != nil {
				for _, w := range opened {
					w.close()
				}
			}
		}()
	}
	persisted, scheme, checks, bounds, err := rs.loadResume(ctx, assigned, txn)
	if err != nil {
		return nil, err
	}
	if txn && scheme != rs.buckets.n {
		// The map was written under another fencing scheme: fence its ids, then read the
		// target again, now that none of them can commit anything more.
		if err := rs.fenceScheme(ctx, scheme, persisted, assigned); err != nil {
			return nil, err
		}
		if persisted, _, checks, bounds, err = rs.loadResume(ctx, assigned, txn); err != nil {
			return nil, err
		}
	}
	rs.boot.mark("map_load")
	out, origins, err := rs.resumeEach(ctx, checks, assigned, persisted, bounds, writers)
	if err != nil {
		return nil, err
	}
	closeUnused(opened, out)
	rs.boot.mark("tail_check")
	if err := rs.finishChecks(ctx, checks); err != nil { // identity.go
		return nil, err
	}
	err = rs.writeResumed(ctx, out, origins, txn)
	rs.boot.mark("finish")
	return out, err
}

// closeUnused closes the writers this resume opened that none of states writes through: every
// partition of the bucket it assigned was stopped (identity.go) instead of resumed. A later
// resume of one of them opens the bucket again.
func closeUnused(opened []*txnWriter, states []*partState) {
	used := map[*txnWriter]bool{}
	for _, ps := range states {
		used[ps.w] = true
	}
	for _, w := range opened {
		if !used[w] {
			w.close()
		}
	}
}

// loadResume reads, all at once, what the resume of assigned needs from both clusters: the
// persisted offset map (to the map topic's end listed now, after the fence), the topic
// identities and record size limits, and the log bounds of every partition.
func (rs *resumer) loadResume(ctx context.Context, assigned []tp, txn bool) (persistedMap, int, *resumeChecks, resumeBounds, error) {
	var (
		scheme    int
		persisted persistedMap
		recorded  map[string]topicIDs
		checks    *resumeChecks
		bounds    resumeBounds
		eg        errgroup.Group
	)
	eg.Go(func() error {
		return rs.boot.timed("map_read", func() error {
			end, err := mapEnd(ctx, rs.dstAdm, rs.cfg.MapTopic)
			if err != nil {
				return fmt.Errorf("target cluster %s: %w", rs.cfg.TargetAlias, err)
			}
			if persisted, recorded, scheme, err = readMap(ctx, rs.dst, rs.cfg.MapTopic, end, txn, rs.cfg.GroupID); err != nil {
				return fmt.Errorf("target cluster %s: %w", rs.cfg.TargetAlias, err)
			}
			return nil
		})
	})
	eg.Go(func() error {
		return rs.boot.timed("identities", func() (err error) {
			checks, err = rs.prepareChecks(ctx, assigned) // identity.go
			return err
		})
	})
	eg.Go(func() error {
		return rs.boot.timed("bounds", func() (err error) {
			bounds, err = rs.listBounds(ctx, assigned, txn)
			return err
		})
	})
	if err := eg.Wait(); err != nil {
		return nil, 0, nil, bounds, err
	}
	checks.recorded = recorded
	return persisted, scheme, checks, bounds, nil
}

// resumeParallel is how many partitions a resume checks and reconciles at once: each check
// is a read or two of one record, so the reads of many partitions overlap their round trips.
const resumeParallel = 32

// resumeEach resumes every assigned partition, resumeParallel at a time: from its persisted
// map (identity checks, tail reconciled) or, when the map knows nothing of it, fresh (its
// origin written). It returns the states in the order of assigned, the origin records to
// write, and the error of the first partition, in that order, that failed.
func (rs *resumer) resumeEach(ctx context.Context, checks *resumeChecks, assigned []tp, persisted persistedMap, bounds resumeBounds, writers map[int]*txnWriter) ([]*partState, []*kgo.Record, error) {
	type result struct {
		ps     *partState
		origin *kgo.Record
		err    error
	}
	rs.prefetchResume(ctx, checks, assigned, persisted, bounds) // startup_read.go
	res := make([]result, len(assigned))
	var eg errgroup.Group
	eg.SetLimit(resumeParallel)
	for i, t := range assigned {
		eg.Go(func() error {
			r := &res[i]
			b, err := bounds.of(rs.cfg, t)
			switch {
			case err != nil:
				r.err = err
			case len(persisted[t].segs) > 0:
				r.ps, r.err = rs.resumePartition(ctx, checks, t, persisted[t], b, writers[rs.buckets.of(t)])
			default:
				r.ps, r.origin, r.err = rs.freshPartition(ctx, t, b, writers[rs.buckets.of(t)])
			}
			return nil
		})
	}
	_ = eg.Wait() // the errors are in res
	out := make([]*partState, 0, len(assigned))
	var origins []*kgo.Record
	for _, r := range res {
		if r.err != nil {
			return nil, nil, r.err
		}
		out = append(out, r.ps)
		if r.origin != nil {
			origins = append(origins, r.origin)
		}
	}
	return out, origins, nil
}

// resumeBounds are the listed log bounds of the partitions being resumed.
type resumeBounds struct{ srcStarts, srcEnds, dstEnds kadm.ListedOffsets }

// partBounds are one partition's: its source log start and end, its target end.
type partBounds struct {
	target                   string
	srcStart, srcEnd, dstEnd int64
}

// listBounds lists the source logs' starts and ends and the target partitions' ends: the
// last stable offset with transactions (records of transactions still open are not known
// yet), the high watermark without. Only the partition's own transactional writer, fenced
// before, writes there.
func (rs *resumer) listBounds(ctx context.Context, assigned []tp, txn bool) (resumeBounds, error) {
	var b resumeBounds
	srcTopics, dstTopics := map[string]bool{}, map[string]bool{}
	for _, t := range assigned {
		srcTopics[t.topic] = true
		dstTopics[rs.cfg.targetTopic(t.topic)] = true
	}
	listEnds := rs.dstAdm.ListEndOffsets
	if txn {
		listEnds = rs.dstAdm.ListCommittedOffsets
	}
	// Three requests, each answered on its own: asked at once.
	var eg errgroup.Group
	eg.Go(func() (err error) {
		if b.srcStarts, err = rs.srcAdm.ListStartOffsets(ctx, keys(srcTopics)...); err != nil {
			return rs.clusterErr("source", rs.cfg.SourceAlias, "list start offsets", err)
		}
		return nil
	})
	eg.Go(func() (err error) {
		if b.srcEnds, err = rs.srcAdm.ListEndOffsets(ctx, keys(srcTopics)...); err != nil {
			return rs.clusterErr("source", rs.cfg.SourceAlias, "list end offsets", err)
		}
		return nil
	})
	eg.Go(func() (err error) {
		if b.dstEnds, err = listEnds(ctx, keys(dstTopics)...); err != nil {
			return rs.clusterErr("target", rs.cfg.TargetAlias, "list end offsets", err)
		}
		return nil
	})
	err := eg.Wait()
	return b, err
}

// of returns partition t's bounds.
func (b resumeBounds) of(c *Config, t tp) (partBounds, error) {
	p := partBounds{target: c.targetTopic(t.topic)}
	var err error
	if p.srcStart, err = offsetOf(b.srcStarts, t.topic, t.partition); err != nil {
		return p, fmt.Errorf("source cluster %s: %w", c.SourceAlias, err)
	}
	if p.srcEnd, err = offsetOf(b.srcEnds, t.topic, t.partition); err != nil {
		return p, fmt.Errorf("source cluster %s: %w", c.SourceAlias, err)
	}
	if p.dstEnd, err = offsetOf(b.dstEnds, p.target, t.partition); err != nil {
		return p, fmt.Errorf("target cluster %s: %w (the target topic needs as many partitions as the source)", c.TargetAlias, err)
	}
	return p, nil
}

// freshPartition starts a partition the map knows nothing of, at the source log start (or
// its end with StartAtEnd), and returns its origin record: written in the partition's first
// transaction with a writer, else returned for writeResumed to produce.
func (rs *resumer) freshPartition(ctx context.Context, t tp, b partBounds, w *txnWriter) (*partState, *kgo.Record, error) {
	start := b.srcStart
	if rs.cfg.StartAtEnd {
		start = b.srcEnd
	}
	pm := offsetmap.PartitionMap{Partition: t.partition, SourceFrom: start, SourceTo: start, TargetTo: b.dstEnd}
	origin := &kgo.Record{Topic: rs.cfg.MapTopic, Partition: 0, Key: mapKey(t, start), Value: mapValue(offsetmap.Segment{Source: start, Target: b.dstEnd})}
	ps := newPartState(t, b.target, pm, start)
	ps.window = rs.cfg.MapWindow
	ps.hwm = b.srcEnd
	if w == nil {
		return ps, origin, nil
	}
	// In the bucket's open transaction: it commits with, or before, the first records.
	ps.w = w
	if err := w.produceWait(ctx, origin); err != nil {
		return nil, nil, fmt.Errorf("target cluster %s: write origin record of %s to %s: %w%s", rs.cfg.TargetAlias, t, rs.cfg.MapTopic, err, hint(err))
	}
	return ps, nil, nil
}

// persistedPartition turns a partition's persisted map (origins have Len 0) into its map and
// the source and target offsets just past what it describes.
func persistedPartition(t tp, p persistedPart) (pm offsetmap.PartitionMap, src, dst int64) {
	segs := p.segs
	pm = offsetmap.PartitionMap{Partition: t.partition, SourceFrom: segs[0].Source}
	if p.exactFrom > 0 {
		// Compacted: the exact map starts at exactFrom, mirroring began at sourceFrom.
		pm.SourceFrom, pm.ExactFrom = min(p.sourceFrom, p.exactFrom), p.exactFrom
	}
	for _, s := range segs {
		if s.Len == 0 {
			if len(pm.Segments) == 0 {
				src, dst = s.Source, s.Target
			}
			continue
		}
		pm.Segments = append(pm.Segments, s)
		src, dst = s.Source+s.Len, s.Target+s.Len
	}
	pm.SourceTo, pm.TargetTo = src, dst
	return pm, src, dst
}

// resumePartition resumes a partition from its persisted map: it checks the partition is still
// the one the map describes, then reconciles the target's tail past the map.
func (rs *resumer) resumePartition(ctx context.Context, checks *resumeChecks, t tp, p persistedPart, b partBounds, w *txnWriter) (*partState, error) {
	pm, persistedSrc, persistedDst := persistedPartition(t, p)
	// Is this still the partition the map describes? (identity.go)
	if stopped, err := rs.checkPartition(ctx, checks, t, b.target, pm, b.srcEnd, b.srcStart, b.dstEnd); err != nil || stopped != nil {
		return stopped, err
	}
	if b.dstEnd < persistedDst {
		return nil, fmt.Errorf("target topic %s partition %d ends at offset %d, but the offset map in %s says kmirror wrote up to %d: the target was truncated or recreated; delete and recreate %s (kmirror then mirrors from the start) or restore the target",
			b.target, t.partition, b.dstEnd, rs.cfg.MapTopic, persistedDst, rs.cfg.MapTopic)
	}
	ps := newPartState(t, b.target, pm, persistedSrc)
	ps.window = rs.cfg.MapWindow
	ps.hwm = b.srcEnd
	ps.w = w
	if b.dstEnd > persistedDst {
		if err := rs.reconcileTail(ctx, ps, persistedSrc, persistedDst, b); err != nil {
			return nil, err
		}
	}
	if ps.next < b.srcStart {
		rs.log.Warn("source records deleted before they were mirrored (retention)", "cluster", rs.cfg.SourceAlias,
			"topic", t.topic, "partition", t.partition, "offset", ps.next, "log_start", b.srcStart)
		ps.next = b.srcStart
	}
	return ps, nil
}

// reconcileTail aligns the target records past the persisted map (alignTail) and says what it
// found.
func (rs *resumer) reconcileTail(ctx context.Context, ps *partState, persistedSrc, persistedDst int64, b partBounds) error {
	n, aborted, err := rs.alignTail(ctx, ps, persistedSrc, persistedDst, b.dstEnd, b.srcEnd)
	if err != nil {
		return err
	}
	if n > 0 {
		rs.log.Info("target tail reconciled", "topic", ps.topic, "partition", ps.partition,
			"records", n, "offset", ps.next, "target_offset", b.dstEnd)
	}
	if aborted > 0 {
		rs.log.Info("an earlier owner's uncommitted records were aborted: mirroring them again", "topic", ps.topic,
			"partition", ps.partition, "target_offsets", aborted, "offset", ps.next, "target_offset", b.dstEnd)
	}
	// The tail was read with read_committed: it is committed data, described by segments
	// that the partition's first commit writes.
	ps.committed(commitPoint{ps.pm.SourceTo, ps.pm.TargetTo})
	return nil
}

// writeResumed writes the origin records of fresh partitions without a transactional writer,
// and, without transactions, the reconciled map (with transactions the next commit writes it).
func (rs *resumer) writeResumed(ctx context.Context, out []*partState, origins []*kgo.Record, txn bool) error {
	if len(origins) > 0 {
		if err := rs.dst.ProduceSync(ctx, origins...).FirstErr(); err != nil {
			return fmt.Errorf("target cluster %s: write origin records to %s: %w%s", rs.cfg.TargetAlias, rs.cfg.MapTopic, err, hint(err))
		}
	}
	if !txn {
		if err := rs.commits.persist(ctx, out); err != nil {
			return fmt.Errorf("target cluster %s: persist reconciled offset map to %s: %w%s", rs.cfg.TargetAlias, rs.cfg.MapTopic, err, hint(err))
		}
	}
	return nil
}

// fenceParallel is how many transactional ids a resume initialises at once: each is a client
// of its own and two round trips (coordinator, InitProducerId), mostly waiting.
const fenceParallel = 64

// fenceAll returns the writers of the buckets of assigned: those this process owns already
// (a partition added to a bucket it writes), and the others created and initialised,
// fenceParallel at a time. opened are the new ones, which the caller closes when the resume
// fails.
func (rs *resumer) fenceAll(ctx context.Context, assigned []tp) (writers map[int]*txnWriter, opened []*txnWriter, err error) {
	writers = map[int]*txnWriter{}
	var need []int
	for _, t := range assigned {
		k := rs.buckets.of(t)
		if _, ok := writers[k]; ok {
			continue
		}
		writers[k] = rs.txn.writerOf(k)
		if writers[k] == nil {
			need = append(need, k)
		}
	}
	var mu sync.Mutex
	err = fenceEach(need, func(k int) error {
		w, err := rs.txn.open(ctx, k)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		writers[k] = w
		opened = append(opened, w)
		return nil
	})
	if err != nil {
		for _, w := range opened {
			w.close()
		}
		return nil, nil, err
	}
	return writers, opened, nil
}

// fenceEach calls fence for every item, fenceParallel at a time, and returns every failure
// joined (each bucket's or id's reason, not only the first).
func fenceEach[T any](items []T, fence func(T) error) error {
	var (
		mu   sync.Mutex
		errs []error
		eg   errgroup.Group
	)
	eg.SetLimit(fenceParallel)
	for _, it := range items {
		eg.Go(func() error {
			if err := fence(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = eg.Wait()
	return errors.Join(errs...)
}

// alignTail maps target records [dstFrom, dstEnd) of ps's target partition onto the source
// records from srcFrom on, in order, and returns how many it mapped and how many target
// offsets of the range a read_committed read did not see (aborted records).
func (rs *resumer) alignTail(ctx context.Context, ps *partState, srcFrom, dstFrom, dstEnd, srcEnd int64) (int, int64, error) {
	type rec struct {
		offset int64
		print  uint64
	}
	var tail []rec
	// With transactions, read_committed: the records of a fenced owner's aborted transaction
	// are not copies to keep, they are mirrored again.
	committed := rs.cfg.Fencing == FenceTransactions
	var seen int64
	err := rs.readResume(ctx, rs.dst, ps.target, ps.partition, dstFrom, dstEnd, committed, func(r *kgo.Record) (bool, error) {
		seen++
		if !r.Attrs.IsControl() {
			tail = append(tail, rec{r.Offset, offsetmap.Fingerprint(r, offsetmap.DefaultFields)})
		}
		return true, nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("target cluster %s: read tail of topic %s partition %d from offset %d: %w", rs.cfg.TargetAlias, ps.target, ps.partition, dstFrom, err)
	}
	aborted := max(dstEnd-dstFrom-seen, 0)
	if len(tail) == 0 {
		return 0, aborted, nil
	}
	i := 0
	err = rs.readResume(ctx, rs.srcCl, ps.topic, ps.partition, srcFrom, srcEnd, true, func(r *kgo.Record) (bool, error) {
		if r.Attrs.IsControl() {
			return true, nil
		}
		if r.Offset < srcFrom {
			return false, fmt.Errorf("source offset %d below %d: the source log moved", r.Offset, srcFrom)
		}
		if offsetmap.Fingerprint(r, offsetmap.DefaultFields) != tail[i].print {
			return false, fmt.Errorf("target topic %s partition %d offset %d is not a copy of source topic %s partition %d offset %d: something other than this kmirror flow wrote to the target, or the source changed; run kverify diff, then delete the target partition's extra records or recreate the topic",
				ps.target, ps.partition, tail[i].offset, ps.topic, ps.partition, r.Offset)
		}
		ps.mu.Lock()
		ps.extend(r.Offset, tail[i].offset)
		ps.next = r.Offset + 1
		ps.mu.Unlock()
		i++
		return i < len(tail), nil
	})
	if err != nil {
		return i, aborted, fmt.Errorf("align target tail with source topic %s partition %d: %w", ps.topic, ps.partition, err)
	}
	if i < len(tail) {
		return i, aborted, fmt.Errorf("target topic %s partition %d has %d records after offset %d that the source topic %s partition %d (ending at %d) does not have: something else wrote to the target; run kverify diff",
			ps.target, ps.partition, len(tail)-i, tail[i].offset, ps.topic, ps.partition, srcEnd)
	}
	return i, aborted, nil
}

func offsetOf(l kadm.ListedOffsets, topic string, partition int32) (int64, error) {
	o, ok := l.Lookup(topic, partition)
	if !ok {
		return 0, fmt.Errorf("topic %s partition %d not found", topic, partition)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("topic %s partition %d: %w%s", topic, partition, o.Err, hint(o.Err))
	}
	return o.Offset, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
