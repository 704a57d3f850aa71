package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// StateVersion is the format version of a state file (`kverify diff --state FILE`).
const StateVersion = 1

// marksKept is how many records before each side's verified end a state keeps to re-check
// the boundary (as many as confirm a resynchronisation point in the aligner).
const marksKept = 8

// ErrStateMismatch is returned (wrapped, saying what differs) by DiffState when the state was
// made for other clusters, other topics, other compared fields or another isolation: it says
// nothing about this comparison, and resuming from it would be a guess.
var ErrStateMismatch = errors.New("the state file belongs to another comparison")

// State is what a verification has proved so far, per partition: the file of `kverify diff
// --state`. It is JSON (format version StateVersion); every field is checked when it is read.
type State struct {
	Version         int      `json:"version"`
	SourceClusterID string   `json:"source_cluster_id"`
	TargetClusterID string   `json:"target_cluster_id"`
	SourceTopic     string   `json:"source_topic"`
	TargetTopic     string   `json:"target_topic"`
	SourceTopicID   string   `json:"source_topic_id,omitempty"` // empty when the broker has no topic IDs
	TargetTopicID   string   `json:"target_topic_id,omitempty"`
	Compared        []string `json:"compared"`
	ReadUncommitted bool     `json:"read_uncommitted,omitempty"`
	// TargetReadUncommitted: the target is compared as read_uncommitted reads it
	// (Config.TargetReadUncommitted); its marks include aborted records.
	TargetReadUncommitted bool      `json:"target_read_uncommitted,omitempty"`
	Updated               time.Time `json:"updated"`
	// Partitions are sorted by partition number.
	Partitions []PartitionState `json:"partitions"`
}

// PartitionState is one partition of a State. Every source offset in [SourceStart, SourceEnd)
// and every target offset below TargetEnd (from where the first run read) has been
// classified; Verified counts what was found there, over all runs.
type PartitionState struct {
	Partition int32 `json:"partition"`
	// SourceStart is where the first run began; SourceEnd is the verified end (exclusive),
	// where the next run resumes.
	SourceStart int64 `json:"source_start"`
	SourceEnd   int64 `json:"source_end"`
	// TargetEnd is just past the last target record classified: the next run reads the
	// target from here, and the next target record must copy source SourceEnd.
	TargetEnd int64 `json:"target_end"`
	// SourceLogStart and TargetLogStart are the log start offsets the last run listed: a log
	// start never moves back, unless the topic was recreated.
	SourceLogStart int64 `json:"source_log_start"`
	TargetLogStart int64 `json:"target_log_start"`
	// SourceListedEnd is the source end offset the last run listed: SourceListedEnd -
	// SourceEnd source offsets were not verified yet (the lag).
	SourceListedEnd int64 `json:"source_listed_end"`
	// Verified are the counts over everything verified so far; any missing, duplicated,
	// mismatched or extra record keeps every later run from being identical.
	Verified align.Counts `json:"verified"`
	// Aborted and AbortedCopies count, over all runs, the records of aborted transactions in
	// the verified target range and the copies of committed records among them (see
	// TxnPartition); a copy committed in a later run's range than its aborted record is not
	// seen as one.
	Aborted       int64 `json:"aborted,omitempty"`
	AbortedCopies int64 `json:"aborted_copies,omitempty"`
	// SourceMarks and TargetMarks are the last records (at most 8) below SourceEnd and
	// TargetEnd, in offset order, with their fingerprints over Compared: a run re-reads them
	// before it resumes, and they must be there, unchanged, with nothing between them.
	SourceMarks []Mark `json:"source_marks"`
	TargetMarks []Mark `json:"target_marks"`
}

// resumable reports whether something of the partition was verified: a run resumes from it.
// A partition state without marks proved nothing, and the next run starts over.
func (p *PartitionState) resumable() bool {
	return p != nil && (len(p.SourceMarks) > 0 || len(p.TargetMarks) > 0)
}

// Mark is a record at a verified boundary: its offset and fingerprint.
type Mark struct {
	Offset int64  `json:"offset"`
	FP     string `json:"fp"` // 16 hexadecimal digits
}

func mark(it align.Item) Mark {
	return Mark{Offset: it.Offset, FP: fmt.Sprintf("%016x", it.FP)}
}

// Partition returns the state of partition p, or nil.
func (s *State) Partition(p int32) *PartitionState {
	if s == nil {
		return nil
	}
	for i := range s.Partitions {
		if s.Partitions[i].Partition == p {
			return &s.Partitions[i]
		}
	}
	return nil
}

// Lag is the number of source offsets listed by the last run and not verified yet, over all
// partitions (transaction markers count, as in a consumer's lag).
func (s *State) Lag() int64 {
	var n int64
	for _, p := range s.Partitions {
		n += max(0, p.SourceListedEnd-p.SourceEnd)
	}
	return n
}

// Differing is the number of missing, duplicated, mismatched and extra records found by all
// runs so far.
func (s *State) Differing() int64 {
	var n int64
	for _, p := range s.Partitions {
		c := p.Verified
		n += c.Missing + c.Duplicated + c.Mismatched + c.Extra
	}
	return n
}

// WriteState writes s as indented JSON.
func WriteState(w io.Writer, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ParseState reads a state file and checks it: the version, the topics, sorted and unique
// partitions, ordered offsets and marks below the verified ends.
func ParseState(b []byte) (*State, error) {
	var s State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a kverify state file: %w", err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("state format version %d, this kverify reads version %d", s.Version, StateVersion)
	}
	if s.SourceTopic == "" || s.TargetTopic == "" {
		return nil, errors.New("the state names no source or target topic")
	}
	if _, err := offsetmap.ParseFields(joinNames(s.Compared)); err != nil {
		return nil, fmt.Errorf("compared fields: %w", err)
	}
	for i, p := range s.Partitions {
		if i > 0 && p.Partition <= s.Partitions[i-1].Partition {
			return nil, fmt.Errorf("partition %d: partitions are not sorted and unique", p.Partition)
		}
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.Partition, err)
		}
	}
	return &s, nil
}

func (p *PartitionState) validate() error {
	switch {
	case p.Partition < 0:
		return errors.New("negative partition")
	case p.SourceStart < 0 || p.SourceEnd < p.SourceStart || p.TargetEnd < 0:
		return fmt.Errorf("offsets out of order (source %d-%d, target end %d)", p.SourceStart, p.SourceEnd, p.TargetEnd)
	case p.Verified.Matched < 0 || p.Verified.Missing < 0 || p.Verified.Duplicated < 0 || p.Verified.Mismatched < 0 || p.Verified.Extra < 0 ||
		p.Aborted < 0 || p.AbortedCopies < 0 || p.AbortedCopies > p.Aborted:
		return errors.New("negative counts")
	}
	for _, side := range []struct {
		name  string
		marks []Mark
		end   int64
	}{{"source", p.SourceMarks, p.SourceEnd}, {"target", p.TargetMarks, p.TargetEnd}} {
		for i, m := range side.marks {
			if _, err := strconv.ParseUint(m.FP, 16, 64); err != nil || len(m.FP) != 16 {
				return fmt.Errorf("%s mark at offset %d: fingerprint %q is not 16 hexadecimal digits", side.name, m.Offset, m.FP)
			}
			if m.Offset < 0 || m.Offset >= side.end || (i > 0 && m.Offset <= side.marks[i-1].Offset) {
				return fmt.Errorf("%s marks are not increasing offsets below the verified end %d", side.name, side.end)
			}
		}
	}
	return nil
}

func joinNames(names []string) string {
	b := []byte{}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, n...)
	}
	return string(b)
}

// StateOptions tune DiffState.
type StateOptions struct {
	// Follow says the mirror is still running. Source records after the last one the target
	// has a copy of are pending: this run neither counts nor verifies them (they are the
	// lag), and target records after the copy of the last source record are left for the
	// next run. Without Follow they are missing and extra as in Diff (but still re-read by the
	// next run, which may find them copied).
	Follow bool
	// Name names the state in messages, e.g. the file's path.
	Name string
}

// StateRun is what DiffState found.
type StateRun struct {
	Result *Result
	// Map covers only the source range this run read: a partition's map starts where it
	// resumed (offsetmap.PartitionMap.SourceFrom), so E(G) for a G below that is not in it.
	Map *offsetmap.TopicMap
	// State is the new state: prev with every partition that verified its range advanced. A
	// partition whose boundary no longer holds keeps its old state.
	State *State
	// Boundary lists the partitions' boundary findings (also in Result.Problems).
	Boundary []string
}

// DiffState is Diff resumed from prev (nil for a first run): each partition that prev has
// verified is compared from its verified end on both sides, after its boundary is re-read.
// A boundary that no longer holds (a topic ID changed, a log that ends or starts below the
// verified end or starts before it started, a boundary record deleted, changed or moved) is a
// finding in Result.Problems and that partition is not compared. Earlier runs' findings are
// problems too, so no run after a difference is identical. prev must be for the same clusters,
// topics, compared fields and isolation (else ErrStateMismatch). cfg.From and cfg.To must be
// earliest and latest: the state says where to start.
func DiffState(ctx context.Context, src, dst *kgo.Client, cfg Config, prev *State, opt StateOptions) (*StateRun, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.From.Kind != Earliest || cfg.To.Kind != Latest {
		return nil, errors.New("a state resumes where it stopped: give no --from or --to with it")
	}
	d := newDiffer(cfg, src, dst, kadm.NewClient(src), kadm.NewClient(dst))
	d.resume, d.taps, d.pendingTail = map[int32]*PartitionState{}, map[int32]*tap{}, opt.Follow
	ids, err := d.identity(ctx)
	if err != nil {
		return nil, err
	}
	if err := prev.matches(ids, cfg, opt.Name); err != nil {
		return nil, err
	}
	run := newStateRun(cfg, ids, prev)
	next, res, om := run.State, run.Result, run.Map
	common, ok, err := d.partitions(ctx, res)
	if err != nil {
		return nil, err
	}
	if !ok {
		res.Identical = false
		return run, nil
	}
	if err := d.judge(ctx, res); err != nil {
		return nil, err
	}
	if d.table {
		return nil, fmt.Errorf("topic %q is judged as a table (%s), and a state resumes record by record: judge its table with kverify diff without --state, or pass --judge log to follow its records one by one",
			cfg.SourceTopic, res.JudgedWhy)
	}
	offs, err := d.offsets(ctx)
	if err != nil {
		return nil, err
	}
	compare, err := d.resumePartitions(ctx, common, prev, ids, offs, opt.Name, run)
	if err != nil {
		return nil, err
	}
	done, err := d.compare(ctx, compare, offs, d.syncs(ctx))
	if err != nil {
		return nil, err
	}
	if err := d.advanceState(ctx, compare, done, offs, next); err != nil {
		return nil, err
	}
	err = d.collect(res, om, compare, done)
	if errors.Is(err, ErrNothingToCompare) && opt.Follow {
		// Nothing mirrored yet: the state says so (no marks), nothing is claimed.
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if len(res.Problems) > 0 {
		res.Identical = false
	}
	if len(run.Boundary) > 0 {
		// Keep the topic IDs the verified records were read from: the next run must find the
		// same change again.
		next.SourceTopicID, next.TargetTopicID = prev.SourceTopicID, prev.TargetTopicID
	}
	return run, nil
}

// newStateRun starts an empty result and map, and the state this run writes: its identities and settings, the partitions of prev.
func newStateRun(cfg Config, ids identities, prev *State) *StateRun {
	next := &State{Version: StateVersion, SourceClusterID: ids.sCluster, TargetClusterID: ids.tCluster,
		SourceTopic: cfg.SourceTopic, TargetTopic: cfg.TargetTopic, SourceTopicID: ids.sTopic, TargetTopicID: ids.tTopic,
		Compared: cfg.Fields.Names(), ReadUncommitted: cfg.ReadUncommitted, TargetReadUncommitted: cfg.TargetReadUncommitted, Updated: time.Now().UTC()}
	if prev != nil {
		next.Partitions = slices.Clone(prev.Partitions)
	}
	return &StateRun{State: next,
		Result: &Result{SourceTopic: cfg.SourceTopic, TargetTopic: cfg.TargetTopic, Compared: cfg.Fields.Names(), Partitions: []align.PartitionResult{}, TargetReadUncommitted: cfg.TargetReadUncommitted},
		Map:    &offsetmap.TopicMap{Version: offsetmap.Version, SourceTopic: cfg.SourceTopic, TargetTopic: cfg.TargetTopic, Partitions: []*offsetmap.PartitionMap{}}}
}

// resumePartitions picks the partitions of common to compare, resuming from prev where the verified boundary holds and reporting in run those where it does not.
func (d *differ) resumePartitions(ctx context.Context, common []int32, prev *State, ids identities, offs listedOffsets, name string, run *StateRun) ([]int32, error) {
	var compare []int32
	for _, p := range common {
		if ps := prev.Partition(p); ps.resumable() {
			if ps.Verified.Differs() {
				run.Result.Problems = append(run.Result.Problems, fmt.Sprintf("partition %d: earlier runs (state %s) found %s in source offsets %d-%d: no later run is identical; delete the state to verify from the start",
					p, name, describeCounts(ps.Verified), ps.SourceStart, ps.SourceEnd-1))
			}
			findings, err := d.checkBoundary(ctx, prev, ids, ps, offs)
			if err != nil {
				return nil, err
			}
			if len(findings) > 0 {
				run.Boundary = append(run.Boundary, findings...)
				run.Result.Problems = append(run.Result.Problems, findings...)
				run.Result.Partitions = append(run.Result.Partitions, align.PartitionResult{Partition: p,
					SourceStart: ps.SourceEnd, SourceEnd: ps.SourceEnd, TargetStart: ps.TargetEnd, TargetEnd: ps.TargetEnd,
					NotCompared: "not compared: the verified boundary no longer holds (see the problems)"})
				run.Result.NotCompared = append(run.Result.NotCompared, p)
				continue
			}
			if len(ps.SourceMarks) > 0 {
				d.resume[p] = ps
			}
		}
		d.taps[p] = &tap{}
		compare = append(compare, p)
	}
	return compare, nil
}

// advanceState moves each compared partition's entry in next past the records this run verified.
func (d *differ) advanceState(ctx context.Context, compare []int32, done compared, offs listedOffsets, next *State) error {
	for _, p := range compare {
		pr, pm := done.results[p], done.maps[p]
		if pr.Err != "" || pm == nil {
			continue
		}
		ps, _, err := d.advance(ctx, p, &pr, pm, offs, done.txns[p])
		if err != nil {
			return err
		}
		if pr.Counts == (align.Counts{}) && d.resume[p] == nil && ps.SourceEnd == ps.SourceStart && pr.SourceEnd > pr.SourceStart {
			done.why[p] = fmt.Sprintf("no source record from offset %d has reached the target yet (lag %d)", pr.SourceStart, ps.SourceListedEnd-ps.SourceEnd)
		}
		done.results[p] = pr
		setPartition(next, ps)
	}
	return nil
}

// describeCounts says "3 missing, 1 extra records".
func describeCounts(c align.Counts) string {
	var parts []string
	for _, x := range []struct {
		n    int64
		name string
	}{{c.Missing, "missing"}, {c.Duplicated, "duplicated"}, {c.Mismatched, "mismatched"}, {c.Extra, "extra"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.name))
		}
	}
	return joinNames(parts) + " records"
}

func setPartition(s *State, ps PartitionState) {
	i, found := slices.BinarySearchFunc(s.Partitions, ps.Partition, func(a PartitionState, p int32) int { return int(a.Partition) - int(p) })
	if found {
		s.Partitions[i] = ps
	} else {
		s.Partitions = slices.Insert(s.Partitions, i, ps)
	}
}

// identities are the cluster and topic IDs a state belongs to.
type identities struct {
	sCluster, tCluster, sTopic, tTopic string
}

func (d *differ) identity(ctx context.Context) (identities, error) {
	var ids identities
	for _, side := range []struct {
		name    string
		cl      *kgo.Client
		topic   string
		cluster *string
		id      *string
	}{{"source", d.src, d.cfg.SourceTopic, &ids.sCluster, &ids.sTopic}, {"target", d.dst, d.cfg.TargetTopic, &ids.tCluster, &ids.tTopic}} {
		// Asked of a broker directly: the client's own metadata cache may still hold the
		// topic ID of a topic deleted and recreated since.
		if len(side.cl.DiscoveredBrokers()) == 0 {
			if err := side.cl.Ping(ctx); err != nil {
				return ids, fmt.Errorf("metadata of the %s cluster: %w (check --%s-brokers)", side.name, err, side.name)
			}
		}
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(side.topic)
		req.Topics = append(req.Topics, rt)
		var resp *kmsg.MetadataResponse
		var err error
		for _, b := range side.cl.DiscoveredBrokers() {
			if resp, err = req.RequestWith(ctx, b); err == nil {
				break
			}
		}
		if resp == nil {
			return ids, fmt.Errorf("metadata of the %s cluster: %v (check --%s-brokers)", side.name, err, side.name)
		}
		if resp.ClusterID != nil {
			*side.cluster = *resp.ClusterID
		}
		for _, t := range resp.Topics {
			if t.Topic != nil && *t.Topic == side.topic && t.ErrorCode == 0 && t.TopicID != ([16]byte{}) {
				*side.id = kadm.TopicID(t.TopicID).String()
			}
		}
	}
	return ids, nil
}

// matches refuses a state made for another comparison.
func (s *State) matches(ids identities, cfg Config, name string) error {
	if s == nil {
		return nil
	}
	bad := func(what, state, now string) error {
		return fmt.Errorf("%w: state %s is for %s %q, this run is for %q: give the state file of this comparison, or a new file to start over", ErrStateMismatch, name, what, state, now)
	}
	switch {
	case s.SourceTopic != cfg.SourceTopic:
		return bad("source topic", s.SourceTopic, cfg.SourceTopic)
	case s.TargetTopic != cfg.TargetTopic:
		return bad("target topic", s.TargetTopic, cfg.TargetTopic)
	case s.SourceClusterID != ids.sCluster:
		return bad("source cluster ID", s.SourceClusterID, ids.sCluster)
	case s.TargetClusterID != ids.tCluster:
		return bad("target cluster ID", s.TargetClusterID, ids.tCluster)
	case joinNames(s.Compared) != joinNames(cfg.Fields.Names()):
		return bad("compared fields (--compare)", joinNames(s.Compared), joinNames(cfg.Fields.Names()))
	case s.ReadUncommitted != cfg.ReadUncommitted:
		return bad("--read-uncommitted", strconv.FormatBool(s.ReadUncommitted), strconv.FormatBool(cfg.ReadUncommitted))
	case s.TargetReadUncommitted != cfg.TargetReadUncommitted:
		return bad("--target-read-uncommitted", strconv.FormatBool(s.TargetReadUncommitted), strconv.FormatBool(cfg.TargetReadUncommitted))
	}
	return nil
}

// checkBoundary re-reads the boundary of partition state ps on both sides and returns what no
// longer holds.
func (d *differ) checkBoundary(ctx context.Context, prev *State, ids identities, ps *PartitionState, o listedOffsets) ([]string, error) {
	cfg := d.cfg
	var out []string
	for _, side := range []struct {
		name, topic    string
		cl             *kgo.Client
		oldID, newID   string
		start, end     int64
		oldStart, vEnd int64
		marks          []Mark
	}{
		{"source", cfg.SourceTopic, d.src, prev.SourceTopicID, ids.sTopic, look(o.sStart, cfg.SourceTopic, ps.Partition), look(o.sEnd, cfg.SourceTopic, ps.Partition), ps.SourceLogStart, ps.SourceEnd, ps.SourceMarks},
		{"target", cfg.TargetTopic, d.dst, prev.TargetTopicID, ids.tTopic, look(o.tStart, cfg.TargetTopic, ps.Partition), look(o.tEnd, cfg.TargetTopic, ps.Partition), ps.TargetLogStart, ps.TargetEnd, ps.TargetMarks},
	} {
		at := fmt.Sprintf("%s topic %q partition %d", side.name, side.topic, ps.Partition)
		if side.oldID != "" && side.newID != "" && side.oldID != side.newID {
			out = append(out, fmt.Sprintf("%s: the topic was recreated (topic ID %s, the state has %s): what was verified below offset %d is gone", at, side.newID, side.oldID, side.vEnd))
			continue
		}
		if side.end < side.vEnd {
			out = append(out, fmt.Sprintf("%s: the log ends at offset %d, below the verified end %d: truncated or recreated", at, side.end, side.vEnd))
			continue
		}
		if side.start < side.oldStart {
			out = append(out, fmt.Sprintf("%s: the log starts at offset %d, before %d where it started at the last run: recreated or rewritten", at, side.start, side.oldStart))
			continue
		}
		if side.start > side.vEnd {
			out = append(out, fmt.Sprintf("%s: the log starts at offset %d, past the verified end %d: records were deleted before they were verified", at, side.start, side.vEnd))
			continue
		}
		marks := side.marks
		if len(marks) > 0 && side.start > marks[len(marks)-1].Offset {
			out = append(out, fmt.Sprintf("%s: the boundary record at offset %d was deleted (the log starts at %d): the boundary cannot be re-checked; delete the state to verify from the start", at, marks[len(marks)-1].Offset, side.start))
			continue
		}
		for len(marks) > 0 && marks[0].Offset < side.start {
			marks = marks[1:]
		}
		if len(marks) == 0 {
			continue
		}
		got, err := d.readMarks(ctx, side.cl, side.name, side.topic, ps.Partition, marks[0].Offset, side.vEnd)
		if err != nil {
			return nil, fmt.Errorf("re-read the boundary of %s: %w", at, err)
		}
		if why := compareMarks(marks, got); why != "" {
			out = append(out, fmt.Sprintf("%s: the records at the verified boundary changed (%s): rewritten or recreated", at, why))
		}
	}
	return out, nil
}

// compareMarks says how got differs from want, or "".
func compareMarks(want, got []Mark) string {
	for i, w := range want {
		switch {
		case i >= len(got):
			return fmt.Sprintf("no record at offset %d any more", w.Offset)
		case got[i].Offset != w.Offset:
			return fmt.Sprintf("the record at offset %d is now at %d", w.Offset, got[i].Offset)
		case got[i].FP != w.FP:
			return fmt.Sprintf("the record at offset %d has fingerprint %s, the state has %s", w.Offset, got[i].FP, w.FP)
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("a record at offset %d that was not there", got[len(want)].Offset)
	}
	return ""
}

// readMarks reads the records of [from, to) of one side as marks.
func (d *differ) readMarks(ctx context.Context, cl *kgo.Client, side, topic string, p int32, from, to int64) ([]Mark, error) {
	if from >= to {
		return nil, nil
	}
	spec := fetchSpec{cluster: side, topic: topic, partition: p, from: from, to: to, committed: !d.cfg.ReadUncommitted, fields: d.cfg.Fields}
	if side == "target" && d.cfg.TargetReadUncommitted && spec.committed {
		// Read as the run read it: the aborted records among the others.
		spec.tally = digest.NewTxnTally(d.cfg.Fields, true)
	}
	s := startFetch(ctx, cl, spec)
	defer s.close()
	var out []Mark
	for {
		it, ok, err := s.Next(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, mark(it))
	}
}

// advance computes the new state of partition p after its run (pr, pm) and the counts the
// state adds; with pendingTail it takes the pending tail out of pr. The verified end is the
// source offset after the last source record the target has a copy of: source records after
// it were read as missing because the target ended before them, and the next run reads
// them again (without Follow this run still reports them missing).
//
// txn is what the target's read passed over in the range compared (nil: nothing): its
// aborted records are added to the state's counts with the records verified.
func (d *differ) advance(ctx context.Context, p int32, pr *align.PartitionResult, pm *offsetmap.PartitionMap, o listedOffsets, txn *TxnPartition) (PartitionState, align.Counts, error) {
	cfg := d.cfg
	tp := d.taps[p]
	old := d.resume[p]
	ps := PartitionState{Partition: p, SourceStart: pr.SourceStart, SourceEnd: pr.SourceEnd, TargetEnd: pr.TargetEnd,
		SourceLogStart: look(o.sStart, cfg.SourceTopic, p), TargetLogStart: look(o.tStart, cfg.TargetTopic, p),
		SourceListedEnd: look(o.sEnd, cfg.SourceTopic, p)}
	if pr.SourceStart >= pr.SourceEnd && !(pr.Counts != align.Counts{}) {
		// No source record in range and nothing found on the target: the target was read
		// only if the whole of it is compared. What was verified stands; else nothing is.
		if old != nil {
			ps = *old
			ps.SourceListedEnd = look(o.sEnd, cfg.SourceTopic, p)
		} else {
			ps.TargetEnd, ps.SourceEnd = 0, ps.SourceStart
		}
		return ps, align.Counts{}, nil
	}
	if old != nil {
		ps.SourceStart, ps.Verified = old.SourceStart, old.Verified
		ps.Aborted, ps.AbortedCopies = old.Aborted, old.AbortedCopies
	}
	if txn != nil {
		// Counted up to pr.TargetEnd, the new verified target end: the next run reads on
		// from there.
		ps.Aborted += txn.Aborted
		ps.AbortedCopies += txn.AbortedCopies
	}
	last := int64(-1) // the last source record mapped
	if n := len(pm.Segments); n > 0 {
		last = pm.Segments[n-1].Source + pm.Segments[n-1].Len - 1
	}
	tail := tp.src.after(last)
	if tail > 0 {
		ps.SourceEnd = pr.SourceStart
		if last >= 0 {
			ps.SourceEnd = last + 1
		}
	}
	counts := pr.Counts
	counts.Missing -= tail
	if d.pendingTail && tail > 0 {
		pr.Missing -= tail
		pr.MissingRanges = slices.DeleteFunc(pr.MissingRanges, func(r align.SourceRange) bool { return r.From > last })
		pr.SourceEnd = ps.SourceEnd
	}
	ps.Verified.Add(counts)
	// The marks: the last records below each verified end, from what this run read or, when
	// the pending tail pushed them out of what was kept, read again now.
	var oldS, oldT []Mark
	if old != nil { // the records just before this run's start
		oldS, oldT = old.SourceMarks, old.TargetMarks
	}
	var err error
	if ps.SourceMarks, err = d.marks(ctx, &tp.src, d.src, "source", cfg.SourceTopic, p, ps.SourceEnd, oldS); err != nil {
		return ps, counts, err
	}
	if ps.TargetMarks, err = d.marks(ctx, &tp.dst, d.dst, "target", cfg.TargetTopic, p, ps.TargetEnd, oldT); err != nil {
		return ps, counts, err
	}
	return ps, counts, nil
}

// marks returns the last marksKept records below end of one side: from what this run read,
// preceded by the old marks (the records just before where this run started) when this run
// read fewer; when the ring no longer holds them (a pending tail longer than the aligner's
// window pushed them out) they are read again, from a few offsets before end.
func (d *differ) marks(ctx context.Context, r *ring, cl *kgo.Client, side, topic string, p int32, end int64, old []Mark) ([]Mark, error) {
	got := r.below(end)
	if len(got) >= marksKept {
		return got[len(got)-marksKept:], nil
	}
	if r.dropped == 0 {
		all := append(slices.Clone(old), got...)
		return all[max(0, len(all)-marksKept):], nil
	}
	read, err := d.readMarks(ctx, cl, side, topic, p, max(0, end-4*marksKept), end)
	if err != nil {
		return nil, fmt.Errorf("read the boundary of %s topic %q partition %d: %w", side, topic, p, err)
	}
	return read[max(0, len(read)-marksKept):], nil
}

// tap records what a partition job read on each side.
type tap struct{ src, dst ring }

// ring keeps the last records a stream yielded (offset and fingerprint) and counts them, with
// the offsets where the stream skipped offsets, so that the records after any offset read can
// be counted.
type ring struct {
	size    int
	items   []align.Item // circular once full; Record is not kept
	next    int
	total   int64
	dropped int64
	runs    []run // a new run at every gap in the offsets
}

type run struct{ off, ord int64 }

func (r *ring) add(it align.Item) {
	if n := len(r.runs); n == 0 || r.runs[n-1].off+(r.total-r.runs[n-1].ord) != it.Offset {
		r.runs = append(r.runs, run{off: it.Offset, ord: r.total})
	}
	r.total++
	it.Record = nil
	if len(r.items) < r.size {
		r.items = append(r.items, it)
		return
	}
	r.items[r.next] = it
	r.next = (r.next + 1) % r.size
	r.dropped++
}

// below returns the records kept with an offset below end, in order.
func (r *ring) below(end int64) []Mark {
	var out []Mark
	for i := range r.items {
		it := r.items[(r.next+i)%len(r.items)]
		if it.Offset < end {
			out = append(out, mark(it))
		}
	}
	return out
}

// after counts the records read with an offset above off.
func (r *ring) after(off int64) int64 {
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].off > off }) - 1
	if i < 0 {
		return r.total
	}
	end := r.total
	if i+1 < len(r.runs) {
		end = r.runs[i+1].ord
	}
	upTo := min(r.runs[i].ord+(off-r.runs[i].off)+1, end)
	return r.total - upTo
}

// wrap returns s yielding through r.
func (r *ring) wrap(s align.Stream) align.Stream { return &tapped{s: s, r: r} }

type tapped struct {
	s align.Stream
	r *ring
}

func (t *tapped) Next(ctx context.Context) (align.Item, bool, error) {
	it, ok, err := t.s.Next(ctx)
	if ok && err == nil {
		t.r.add(it)
	}
	return it, ok, err
}
