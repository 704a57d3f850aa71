package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/digest"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
	"github.com/kmigrate/kmigrate/offsetmap"
)

// PositionKind says how a Position is given.
type PositionKind uint8

// The kinds of Position. The zero kind is "not set" (SetDefaults chooses).
const (
	Earliest PositionKind = iota + 1
	Latest
	AtOffset
	AtTime
)

// Position is where a comparison starts (From) or ends (To) in each source partition.
type Position struct {
	Kind   PositionKind
	Offset int64     // AtOffset
	Time   time.Time // AtTime
}

// ParsePosition parses "earliest", "latest", an offset ("1200") or an RFC 3339 time
// ("2026-11-30T08:00:00Z").
func ParsePosition(s string) (Position, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "earliest", "start", "":
		return Position{Kind: Earliest}, nil
	case "latest", "end":
		return Position{Kind: Latest}, nil
	}
	if o, err := strconv.ParseInt(s, 10, 64); err == nil {
		if o < 0 {
			return Position{}, fmt.Errorf("offset %d is negative: give an offset >= 0, earliest, latest or an RFC 3339 time", o)
		}
		return Position{Kind: AtOffset, Offset: o}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Position{}, fmt.Errorf("%q is not earliest, latest, an offset or an RFC 3339 time such as 2026-11-30T08:00:00Z", s)
	}
	return Position{Kind: AtTime, Time: t}, nil
}

// String implements fmt.Stringer.
func (p Position) String() string {
	switch p.Kind {
	case Earliest:
		return "earliest"
	case Latest:
		return "latest"
	case AtOffset:
		return strconv.FormatInt(p.Offset, 10)
	case AtTime:
		return p.Time.Format(time.RFC3339Nano)
	}
	return "unset"
}

// PartitionRange is an inclusive range of partition numbers.
type PartitionRange struct{ From, To int32 }

// ErrNothingToCompare is returned (wrapped, naming every partition and why) by Diff when no
// partition asked for holds a source record in the range asked and no target record was
// found to differ: the run proves nothing, so it reports nothing.
var ErrNothingToCompare = errors.New("nothing to compare")

// Progress is reported while a partition is read.
type Progress struct {
	Partition    int32
	SourceOffset int64 // next source offset to align
	SourceFrom   int64
	SourceTo     int64
	TargetOffset int64 // just past the last target record aligned
	Records      int64 // records read on both sides so far
	Done         bool
}

// Config is what Diff compares.
type Config struct {
	SourceTopic string
	// TargetTopic is the topic's name on the target. Default: SourceTopic (identity policy).
	TargetTopic string
	// Partitions are the source partitions to compare. Default (nil, with no PartitionRanges):
	// all. A partition count that differs between the topics is a Problem unless the
	// partitions given all exist on the target.
	Partitions []int32
	// PartitionRanges add inclusive ranges of partitions (the form of --partitions 5-9). They
	// are checked against the source topic before they are expanded: a range reaching past
	// the topic's partitions is an error, whatever its size.
	PartitionRanges []PartitionRange
	// From and To bound the comparison in every source partition: [From, To). An offset To is
	// exclusive (like an end offset); a time To ends before the first record at or after it.
	// Default: earliest and latest (the last stable offset with read_committed).
	From, To Position
	// offsetmap.Fields are compared. Default: offsetmap.DefaultFields (key, value, headers).
	Fields offsetmap.Fields
	// Window is the aligner's look-ahead per partition in records. Default: align.DefaultWindow.
	Window int
	// History is how many matched records per partition are remembered to recognise replays.
	// Default: align.DefaultHistory (at least Window).
	History int
	// Parallel is how many partitions are read at once. Default: 4.
	Parallel int
	// ReadUncommitted reads aborted and open transactions too, on both sides: a source's own
	// aborted records are then compared too (missing when the mirror left them out), and no
	// aborted record is told apart. Default: false, both sides are read with read_committed
	// (see doc.go), the target's aborted records are counted in Result.Transactions.
	ReadUncommitted bool
	// TargetReadUncommitted reads the source with read_committed and the target as a
	// read_uncommitted consumer reads it below its last stable offset: the target's aborted
	// records are compared like the others (a copy of a source record is duplicated, another
	// is extra) and still counted in Result.Transactions. Not with ReadUncommitted.
	TargetReadUncommitted bool
	// OffsetSyncsTopic names MM2's offset-syncs topic, read with OffsetSyncsClient, whose syncs
	// tell where to start reading the target when From is not earliest. Optional: without it
	// the target start is found by timestamp.
	OffsetSyncsTopic  string
	OffsetSyncsClient *kgo.Client
	// MaxListed caps each list of ranges in a align.PartitionResult. Default: 1000.
	MaxListed int
	// Progress, when set, is called from the partition goroutines (it must be safe for
	// concurrent use) every few thousand records and when a partition is done.
	Progress func(Progress)
	// Judge is how a topic is judged: JudgeAuto (default) a table when its cleanup.policy
	// includes compact on either side, JudgeLog record by record, JudgeTable by the latest
	// record of every key (TablePartition). A table is judged over whole partitions: From
	// and To must be earliest and latest.
	Judge Judgement
	// Logger receives debug and warning events. Default: discard.
	Logger *slog.Logger
}

// UseOffsetSyncs has Diff take the lower bound of the target start from the flow's MM2
// offset syncs, read from the cluster the flow keeps them on (src or dst), when From is not
// earliest; with From earliest it does nothing.
func (c *Config) UseOffsetSyncs(flow *mm2.Flow, src, dst *kgo.Client) {
	if c.From.Kind == Earliest {
		return
	}
	c.OffsetSyncsTopic, c.OffsetSyncsClient = flow.OffsetSyncsTopic(), src
	if flow.OffsetSyncsOnTarget() {
		c.OffsetSyncsClient = dst
	}
}

// SetDefaults fills in the defaults documented on each field.
func (c *Config) SetDefaults() {
	if c.TargetTopic == "" {
		c.TargetTopic = c.SourceTopic
	}
	if c.From.Kind == 0 {
		c.From.Kind = Earliest
	}
	if c.To.Kind == 0 {
		c.To.Kind = Latest
	}
	if c.Fields == 0 {
		c.Fields = offsetmap.DefaultFields
	}
	if c.Window <= 0 {
		c.Window = align.DefaultWindow
	}
	if c.Parallel <= 0 {
		c.Parallel = 4
	}
	if c.MaxListed <= 0 {
		c.MaxListed = 1000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Judge == "" {
		c.Judge = JudgeAuto
	}
}

// Validate checks c after SetDefaults.
func (c *Config) Validate() error {
	if c.SourceTopic == "" {
		return errors.New("no source topic: give --topic")
	}
	if c.From.Kind == Latest {
		return errors.New("from latest compares nothing: give earliest, an offset or a time")
	}
	if c.To.Kind == Earliest {
		return errors.New("to earliest compares nothing: give latest, an offset or a time")
	}
	if c.From.Kind == AtOffset && c.To.Kind == AtOffset && c.To.Offset < c.From.Offset {
		return fmt.Errorf("from offset %d is after to offset %d", c.From.Offset, c.To.Offset)
	}
	if c.From.Kind == AtTime && c.To.Kind == AtTime && c.To.Time.Before(c.From.Time) {
		return fmt.Errorf("from %s is after to %s", c.From, c.To)
	}
	if _, err := ParseJudgement(string(c.Judge)); err != nil {
		return fmt.Errorf("judge %w", err)
	}
	if c.Judge == JudgeTable && (c.From.Kind != Earliest || c.To.Kind != Latest) {
		return tableRangeErr(c.SourceTopic, "asked (--judge table)", c.From, c.To)
	}
	if c.ReadUncommitted && c.TargetReadUncommitted {
		return errors.New("read uncommitted and target read uncommitted together: give one (read uncommitted reads both sides so)")
	}
	if c.OffsetSyncsTopic != "" && c.OffsetSyncsClient == nil {
		return fmt.Errorf("offset syncs topic %q given without a client to read it", c.OffsetSyncsTopic)
	}
	for _, p := range c.Partitions {
		if p < 0 {
			return fmt.Errorf("partition %d is negative", p)
		}
	}
	for _, r := range c.PartitionRanges {
		if r.From < 0 || r.To < r.From {
			return fmt.Errorf("partition range %d-%d is negative or reversed", r.From, r.To)
		}
	}
	return nil
}

// Diff compares SourceTopic on src with TargetTopic on dst partition by partition (at most
// Parallel at once) and returns the result and the exact offset map. A missing target topic and
// a partition count mismatch are Problems in the result (the common partitions are still
// compared); a partition that cannot be read has its Err set. The error is for failures of the
// whole call: a missing source topic, a partition that does not exist, an unreachable cluster.
//
// src and dst are used for metadata, offset lookups and raw fetches; they must not be group
// consumers.
func Diff(ctx context.Context, src, dst *kgo.Client, cfg Config) (*Result, *offsetmap.TopicMap, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	d := newDiffer(cfg, src, dst, kadm.NewClient(src), kadm.NewClient(dst))
	res := &Result{SourceTopic: cfg.SourceTopic, TargetTopic: cfg.TargetTopic, Compared: cfg.Fields.Names(),
		Partitions: []align.PartitionResult{}, TargetReadUncommitted: cfg.TargetReadUncommitted}
	om := &offsetmap.TopicMap{Version: offsetmap.Version, SourceTopic: cfg.SourceTopic, TargetTopic: cfg.TargetTopic, Partitions: []*offsetmap.PartitionMap{}}
	common, ok, err := d.partitions(ctx, res)
	if err != nil || !ok {
		if err != nil {
			return nil, nil, err
		}
		return res, om, nil
	}
	if err := d.judge(ctx, res); err != nil {
		return nil, nil, err
	}
	offs, err := d.offsets(ctx)
	if err != nil {
		return nil, nil, err
	}
	done, err := d.compare(ctx, common, offs, d.syncs(ctx))
	if err != nil {
		return nil, nil, err
	}
	if err := d.collect(res, om, common, done); err != nil {
		return nil, nil, err
	}
	return res, om, nil
}

// differ is one call of Diff: the clients and the configuration, with defaults.
type differ struct {
	cfg        Config
	src, dst   *kgo.Client
	sadm, tadm *kadm.Client
	// sLeaders and tLeaders hold the partition leaders of the metadata the call read
	// first, so that no partition read asks for them again.
	sLeaders, tLeaders *logread.Leaders

	// Set by DiffState (state.go) only. resume holds the partitions resumed from their
	// verified ends, taps what each job read, and pendingTail says the target is not
	// compared past the copy of the last source record (the mirror is running).
	resume      map[int32]*PartitionState
	taps        map[int32]*tap
	pendingTail bool

	// table is set when the topic is judged as a table (judge).
	table bool
}

// judge decides how the topic is judged (Config.Judge, judgements), records it in res and
// refuses a table over less than whole partitions.
func (d *differ) judge(ctx context.Context, res *Result) error {
	j := judgements(ctx, d.sadm, d.tadm, d.cfg.Judge, [][2]string{{d.cfg.SourceTopic, d.cfg.TargetTopic}})[d.cfg.SourceTopic]
	return d.setJudged(res, j)
}

// setJudged records j in d and res; a table over less than whole partitions is an error.
func (d *differ) setJudged(res *Result, j judged) error {
	d.table = j.table
	res.Judged, res.JudgedWhy = JudgeLog, j.why
	if !j.table {
		return nil
	}
	res.Judged = JudgeTable
	if d.cfg.From.Kind != Earliest || d.cfg.To.Kind != Latest {
		return tableRangeErr(d.cfg.SourceTopic, j.why, d.cfg.From, d.cfg.To)
	}
	return nil
}

// newDiffer is a differ with empty leader caches.
func newDiffer(cfg Config, src, dst *kgo.Client, sadm, tadm *kadm.Client) *differ {
	return &differ{cfg: cfg, src: src, dst: dst, sadm: sadm, tadm: tadm, sLeaders: &logread.Leaders{}, tLeaders: &logread.Leaders{}}
}

// partitions finds the partitions to compare, those asked for that both topics have, and
// records in res the topic-level problems and the partitions the target lacks. ok is false
// when the target topic does not exist (res then says so for every partition asked).
func (d *differ) partitions(ctx context.Context, res *Result) (common []int32, ok bool, err error) {
	cfg := d.cfg
	sparts, err := topicPartitions(ctx, d.sadm, "source", cfg.SourceTopic, d.sLeaders)
	if err != nil {
		return nil, false, err
	}
	if sparts == nil {
		return nil, false, fmt.Errorf("source topic %q does not exist: check --topic and --source-brokers", cfg.SourceTopic)
	}
	want, err := selectPartitions(cfg, sparts)
	if err != nil {
		return nil, false, err
	}
	asked := cfg.Partitions != nil || cfg.PartitionRanges != nil
	tparts, err := topicPartitions(ctx, d.tadm, "target", cfg.TargetTopic, d.tLeaders)
	if err != nil {
		return nil, false, err
	}
	problems, absent := topicProblems(res, sparts, tparts, want, asked, topicAdvice{
		missing: " (check --target-topic and the replication policy)", count: "the common partitions are compared"})
	res.Problems = append(res.Problems, problems...)
	for _, p := range want {
		if !absent[p] {
			common = append(common, p)
			continue
		}
		msg := fmt.Sprintf("target topic %q has no partition %d", cfg.TargetTopic, p)
		if tparts == nil {
			msg = fmt.Sprintf("target topic %q does not exist", cfg.TargetTopic)
		}
		res.Partitions = append(res.Partitions, align.PartitionResult{Partition: p, Err: msg, Cause: &targetMissingError{msg}})
	}
	return common, tparts != nil, nil
}

// topicAdvice words what a caller of topicProblems makes of a missing target topic (appended
// to the problem) and of a partition count that differs (after it).
type topicAdvice struct{ missing, count string }

// topicProblems returns the topic-level problems of res's source topic, whose partitions are
// sparts, with a target topic whose partitions are tparts (nil: it does not exist), and the
// partitions of want the target lacks. A partition count that differs is a problem unless
// only some partitions were asked for (asked) and the target has them all.
func topicProblems(res *Result, sparts, tparts, want []int32, asked bool, advice topicAdvice) (problems []string, absent map[int32]bool) {
	absent = map[int32]bool{}
	for _, p := range want {
		if _, ok := slices.BinarySearch(tparts, p); !ok {
			absent[p] = true
		}
	}
	switch {
	case tparts == nil:
		problems = append(problems, fmt.Sprintf("target topic %q does not exist: nothing of source topic %q has been mirrored%s", res.TargetTopic, res.SourceTopic, advice.missing))
	case len(sparts) != len(tparts) && !(asked && len(absent) == 0):
		problems = append(problems, fmt.Sprintf("partition count differs: source topic %q has %d partitions, target topic %q has %d; %s", res.SourceTopic, len(sparts), res.TargetTopic, len(tparts), advice.count))
	}
	return problems, absent
}

// listedOffsets are the offsets Diff bounds every partition with: the log start and end of
// both topics, and the source offsets at From and To when they are times.
type listedOffsets struct {
	sStart, sEnd, tStart, tEnd kadm.ListedOffsets
	sFromT, sToT               kadm.ListedOffsets
}

func (d *differ) offsets(ctx context.Context) (listedOffsets, error) {
	return listOffsets(ctx, d.sadm, d.tadm, d.cfg, []string{d.cfg.SourceTopic}, []string{d.cfg.TargetTopic})
}

// listOffsets lists the offsets of the source topics srcTopics and of the target topics
// dstTopics that cfg bounds the partitions with, in one request per kind and cluster. The
// target is listed first: while a mirror runs, every target record below the end listed is
// then a copy of a source record below the source end listed after it, so no copy of a
// record past the source range is mistaken for an extra record.
func listOffsets(ctx context.Context, sadm, tadm *kadm.Client, cfg Config, srcTopics, dstTopics []string) (listedOffsets, error) {
	var o listedOffsets
	list := func(dst *kadm.ListedOffsets, what, side string, topics []string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) error {
		if len(topics) == 0 {
			return nil // an empty list would mean every topic
		}
		l, err := listRetrying(ctx, func() (kadm.ListedOffsets, error) { return f(ctx, topics...) })
		if err != nil {
			return fmt.Errorf("%s of %s: %w", what, topicsNamed(side, topics), err)
		}
		*dst = l
		return nil
	}
	ends := func(adm *kadm.Client) func(context.Context, ...string) (kadm.ListedOffsets, error) {
		if cfg.ReadUncommitted {
			return adm.ListEndOffsets
		}
		return adm.ListCommittedOffsets
	}
	after := func(t time.Time) func(context.Context, ...string) (kadm.ListedOffsets, error) {
		return func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
			return sadm.ListOffsetsAfterMilli(ctx, t.UnixMilli(), topics...)
		}
	}
	steps := []func() error{
		func() error { return list(&o.tStart, "list start offsets", "target", dstTopics, tadm.ListStartOffsets) },
		func() error { return list(&o.tEnd, "list end offsets", "target", dstTopics, ends(tadm)) },
		func() error { return list(&o.sStart, "list start offsets", "source", srcTopics, sadm.ListStartOffsets) },
		func() error { return list(&o.sEnd, "list end offsets", "source", srcTopics, ends(sadm)) },
	}
	if t := cfg.From.Time; cfg.From.Kind == AtTime {
		steps = append(steps, func() error {
			return list(&o.sFromT, "look up offsets at --from "+t.Format(time.RFC3339), "source", srcTopics, after(t))
		})
	}
	if t := cfg.To.Time; cfg.To.Kind == AtTime {
		steps = append(steps, func() error {
			return list(&o.sToT, "look up offsets at --to "+t.Format(time.RFC3339), "source", srcTopics, after(t))
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// listRetryFor is how long listOffsets asks again after a retriable failure: long enough for
// a cluster to move the leadership of a dead broker's partitions (a KRaft broker is fenced
// after broker.session.timeout.ms, 9 s by default; a ZooKeeper session expires after 6 s),
// and for a broker restarting to serve again.
const listRetryFor = 60 * time.Second

// listRetrying lists with list, asking again every second for up to listRetryFor while the
// failure is retriable (logread.Retriable: a leader moving, a broker that died or cannot be
// dialled). A topic or partition that does not exist is not waited for.
func listRetrying(ctx context.Context, list func() (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		l, err := list()
		if err == nil {
			err = l.Error()
		}
		if err == nil {
			return l, nil
		}
		if !logread.Retriable(err) || errors.Is(err, kerr.UnknownTopicOrPartition) || time.Since(start) > listRetryFor ||
			!logread.Wait(ctx, time.Second) {
			if attempt > 1 {
				err = fmt.Errorf("%w (asked %d times in %s)", err, attempt, time.Since(start).Round(time.Second))
			}
			return l, err
		}
	}
}

// topicsNamed names topics of side in an error: the topic, or how many.
func topicsNamed(side string, topics []string) string {
	if len(topics) == 1 {
		return fmt.Sprintf("%s topic %q", side, topics[0])
	}
	return fmt.Sprintf("%d %s topics", len(topics), side)
}

// syncs reads MM2's offset syncs when they can tell where to start reading the target: nil
// without an offset-syncs topic, from earliest, or when they cannot be read (a warning).
func (d *differ) syncs(ctx context.Context) *mm2.SyncIndex {
	cfg := d.cfg
	if cfg.OffsetSyncsTopic == "" || cfg.From.Kind == Earliest {
		return nil
	}
	all, err := mm2.ReadOffsetSyncs(ctx, cfg.OffsetSyncsClient, cfg.OffsetSyncsTopic)
	if err != nil {
		cfg.Logger.Warn("offset syncs unreadable, finding the target start by timestamp", "topic", cfg.OffsetSyncsTopic, "err", err)
	}
	return mm2.IndexSyncs(all)
}

func look(l kadm.ListedOffsets, topic string, p int32) int64 {
	o, _ := l.Lookup(topic, p)
	return o.Offset
}

// sourceRange is the source range [from, to) of partition p that cfg asks for, within its log
// [ss, se), and why it holds nothing to compare when it does not.
func (d *differ) sourceRange(o listedOffsets, p int32) (from, to int64, why string) {
	cfg := d.cfg
	ss, se := look(o.sStart, cfg.SourceTopic, p), look(o.sEnd, cfg.SourceTopic, p)
	from, to = ss, se
	fromT, toT := int64(-1), int64(-1)
	switch cfg.From.Kind {
	case AtOffset:
		from = cfg.From.Offset
	case AtTime:
		// ListOffsets by time answers -1 when no record is at or after it; some brokers
		// answer the end offset instead: both mean nothing from there.
		if fromT = look(o.sFromT, cfg.SourceTopic, p); fromT >= se {
			fromT = -1
		}
		if fromT >= 0 {
			from = fromT
		} else {
			from = se
		}
	}
	switch cfg.To.Kind {
	case AtOffset:
		to = cfg.To.Offset
	case AtTime:
		if toT = look(o.sToT, cfg.SourceTopic, p); toT >= 0 {
			to = toT
		}
	}
	if ps := d.resume[p]; ps != nil {
		from = ps.SourceEnd // the verified end; DiffState checked ss <= it <= se
	}
	from = min(max(from, ss), se)
	to = min(max(to, from), se)
	return from, to, notComparedWhy(cfg, ss, se, from, to, fromT, toT)
}

// compared is what the partition jobs found: per partition its result, its map (when it was
// aligned without error) and why it had nothing to compare.
type compared struct {
	results map[int32]align.PartitionResult
	maps    map[int32]*offsetmap.PartitionMap
	why     map[int32]string
	txns    map[int32]*TxnPartition // the target partitions with aborted records or an open transaction
	tables  map[int32]*TablePartition
}

// compare aligns the common partitions, at most Parallel at once (runPool, as DiffTopics
// does for all its topics). A partition that fails has its Err and Cause set; the error is
// the context's.
func (d *differ) compare(ctx context.Context, common []int32, o listedOffsets, syncs *mm2.SyncIndex) (compared, error) {
	r := &topicRun{d: d, want: common}
	err := runPool(ctx, d.cfg, []*topicRun{r}, o, syncs)
	return r.done, err
}

// job is the alignment of partition p over the source range [from, to).
func (d *differ) job(o listedOffsets, p int32, from, to int64, syncs *mm2.SyncIndex) partJob {
	cfg := d.cfg
	ss := look(o.sStart, cfg.SourceTopic, p)
	j := partJob{
		spec: PartitionSpec{
			SourceTopic: cfg.SourceTopic, TargetTopic: cfg.TargetTopic, Partition: p,
			SourceFrom: from, SourceTo: to,
			TargetFrom: look(o.tStart, cfg.TargetTopic, p), TargetTo: look(o.tEnd, cfg.TargetTopic, p),
			Fields: cfg.Fields, Window: cfg.Window, History: cfg.History, MaxListed: cfg.MaxListed, ReadUncommitted: cfg.ReadUncommitted,
			TargetReadUncommitted: cfg.TargetReadUncommitted,
			// The whole target is compared when the whole source is: leading records are
			// extra unless the source lost older records to retention.
			StrictTargetFrom: cfg.From.Kind == Earliest && ss == 0,
			StrictTargetTo:   cfg.To.Kind == Latest,
		},
		hint:     cfg.From.Kind != Earliest || ss > 0,
		syncs:    syncs,
		progress: cfg.Progress,
		logger:   cfg.Logger,
		leaders:  [2]*logread.Leaders{d.sLeaders, d.tLeaders},
	}
	if ps := d.resume[p]; ps != nil {
		// Resumed: the next target record must copy the source record at the verified end.
		j.spec.TargetFrom, j.spec.StrictTargetFrom, j.hint = ps.TargetEnd, true, false
	}
	if d.pendingTail {
		j.spec.StrictTargetTo = false
	}
	if d.table {
		// A table is the whole partition on both sides.
		j.table, j.hint = true, false
		j.spec.StrictTargetFrom, j.spec.StrictTargetTo = true, true
	}
	if t := d.taps[p]; t != nil {
		t.src.size, t.dst.size = marksKept+cfg.Window+64, marksKept+cfg.Window+64
		j.tap = t
	}
	return j
}

// collect puts the partition results and maps into res and om, judges Identical, and returns
// ErrNothingToCompare (wrapped, naming every partition) when no partition had anything to
// compare and nothing failed.
func (d *differ) collect(res *Result, om *offsetmap.TopicMap, common []int32, done compared) error {
	cfg := d.cfg
	for _, p := range common {
		pr := done.results[p]
		if pr.Err == "" && pr.Counts == (align.Counts{}) && d.resume[p] == nil {
			// No source record in range and no target record found to differ: the
			// partition proves nothing, so it is not identical and has no map (an answer
			// from it would be a guess).
			pr.NotCompared = "nothing to compare: " + done.why[p]
			res.NotCompared = append(res.NotCompared, p)
		} else if pm := done.maps[p]; pm != nil && pr.MapLeftOut == "" {
			om.Partitions = append(om.Partitions, pm)
		}
		res.Partitions = append(res.Partitions, pr)
	}
	res.addTxns(done)
	for _, p := range common {
		if tp := done.tables[p]; tp != nil {
			res.Tables = append(res.Tables, *tp)
		}
	}
	res.tally()
	if res.verdict() != StatusNothing {
		return nil
	}
	var b strings.Builder
	for i, pr := range res.Partitions {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more partitions", len(res.Partitions)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "partition %d: %s", pr.Partition, strings.TrimPrefix(pr.NotCompared, "nothing to compare: "))
	}
	return fmt.Errorf("%w: source topic %q has no record in the range asked (--from %s, --to %s) in any partition asked (%s): check --from, --to and --partitions",
		ErrNothingToCompare, cfg.SourceTopic, cfg.From, cfg.To, b.String())
}

// tally sorts r's partitions, sums their counts in Summary and sets Identical from the
// verdict: Diff, DiffTopics and a merge of shards judge a topic the same way.
func (r *Result) tally() {
	sort.Slice(r.Partitions, func(i, j int) bool { return r.Partitions[i].Partition < r.Partitions[j].Partition })
	r.Summary = align.Counts{}
	for _, pr := range r.Partitions {
		r.Summary.Add(pr.Counts)
	}
	r.tallyTxns()
	r.Identical = r.verdict() == StatusIdentical
}

// verdict judges a topic from its partitions (NotCompared listing those with nothing to
// compare) and its problems: it differs when a partition differs or a topic problem was
// found, is an error when a partition could not be read, has nothing to compare when no
// partition had, and is identical otherwise.
func (r *Result) verdict() DiffStatus {
	failed := false
	for _, pr := range r.Partitions {
		if pr.Differs() {
			return StatusDiffers
		}
		failed = failed || pr.Err != ""
	}
	switch {
	case len(r.Problems) > 0:
		return StatusDiffers
	case failed:
		return StatusError
	case len(r.NotCompared) >= len(r.Partitions):
		return StatusNothing
	}
	return StatusIdentical
}

// selectPartitions returns the sorted partitions of sparts (sorted) that cfg asks for, all
// without Partitions and PartitionRanges. A partition or range the topic does not have is an
// error; ranges are checked against the topic before anything is expanded, so the work is
// bounded by the topic's partitions, not by the numbers given.
func selectPartitions(cfg Config, sparts []int32) ([]int32, error) {
	if cfg.Partitions == nil && cfg.PartitionRanges == nil {
		return sparts, nil
	}
	has := func(p int32) bool { _, ok := slices.BinarySearch(sparts, p); return ok }
	last := int32(-1)
	if len(sparts) > 0 {
		last = sparts[len(sparts)-1]
	}
	them := fmt.Sprintf("it has %d partitions", len(sparts))
	if len(sparts) > 0 {
		them += fmt.Sprintf(", %d-%d", sparts[0], last)
	}
	lacks := func(from, to int32) error {
		if from == to {
			return fmt.Errorf("source topic %q has no partition %d (%s): check --partitions", cfg.SourceTopic, from, them)
		}
		return fmt.Errorf("source topic %q has no partitions %d-%d (%s): check --partitions", cfg.SourceTopic, from, to, them)
	}
	set := make(map[int32]bool)
	for _, p := range cfg.Partitions {
		if !has(p) {
			return nil, lacks(p, p)
		}
		set[p] = true
	}
	for _, r := range cfg.PartitionRanges {
		if r.To > last {
			return nil, lacks(max(r.From, last+1), r.To)
		}
		for p := r.From; p <= r.To; p++ { // at most len(sparts) steps: r.To <= last
			if !has(p) {
				return nil, lacks(p, p)
			}
			set[p] = true
		}
	}
	want := make([]int32, 0, len(set))
	for p := range set {
		want = append(want, p)
	}
	slices.Sort(want)
	return want, nil
}

// notComparedWhy says why source offsets [from, to) of a partition whose log is [ss, se) hold
// nothing to compare, as asked by cfg.From and cfg.To.
func notComparedWhy(cfg Config, ss, se, from, to int64, fromT, toT int64) string {
	switch {
	case ss == se:
		return fmt.Sprintf("the source partition is empty (its log starts and ends at offset %d)", se)
	case cfg.From.Kind == AtOffset && cfg.From.Offset >= se:
		return fmt.Sprintf("--from %d is at or past the source partition's end offset %d", cfg.From.Offset, se)
	case cfg.From.Kind == AtTime && fromT < 0:
		return fmt.Sprintf("no source record at or after --from %s (the partition ends at offset %d)", cfg.From, se)
	case cfg.To.Kind == AtOffset && cfg.To.Offset <= from:
		return fmt.Sprintf("--to %d is at or before the start offset %d", cfg.To.Offset, from)
	case cfg.To.Kind == AtTime && toT >= 0 && toT <= from:
		return fmt.Sprintf("no source record from offset %d is before --to %s", from, cfg.To)
	}
	return fmt.Sprintf("source offsets %d-%d hold no record to compare (only transaction markers, aborted or compacted records)", from, to-1)
}

// topicPartitions lists the partitions of topic, or nil if it does not exist, and puts their
// leaders in leaders.
func topicPartitions(ctx context.Context, adm *kadm.Client, side, topic string, leaders *logread.Leaders) ([]int32, error) {
	parts, td, err := clustermeta.TopicPartitions(ctx, adm, topic)
	if err != nil {
		return nil, fmt.Errorf("list topic %q on the %s cluster: %w (check --%s-brokers)", topic, side, err, side)
	}
	if td.Err != nil {
		if !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("list topic %q on the %s cluster: %w", topic, side, td.Err)
		}
		return nil, nil
	}
	rememberLeaders(leaders, td)
	return parts, nil
}

// PartitionSpec is one partition over explicit offset ranges (one job of Diff).
type PartitionSpec struct {
	SourceTopic, TargetTopic string
	Partition                int32
	// SourceFrom and SourceTo bound the source range [SourceFrom, SourceTo). A negative
	// SourceTo means the end offset (the last stable offset with read_committed).
	SourceFrom, SourceTo int64
	// TargetFrom and TargetTo bound the target range read. A negative TargetTo means the end
	// offset. TargetFrom is a lower bound unless StrictTargetFrom: see align.Options.
	TargetFrom, TargetTo int64
	// offsetmap.Fields compared. Default: offsetmap.DefaultFields.
	Fields offsetmap.Fields
	// Window is the look-ahead. Default: align.DefaultWindow, or less for a small range.
	Window int
	// History: see align.Options. Default: align.DefaultHistory, or less for a small range.
	History int

	// StrictTargetFrom and StrictTargetTo: see align.Options. Default false: the target range
	// is a window around the copy (TargetFrom may be a little before it, TargetTo after it).
	StrictTargetFrom, StrictTargetTo bool
	// ReadUncommitted and TargetReadUncommitted: see Config. Default false (read_committed).
	ReadUncommitted, TargetReadUncommitted bool
	// MaxListed: see align.Options. Default: 1000.
	MaxListed int
}

type partJob struct {
	spec PartitionSpec
	// hint: spec.TargetFrom is only the log start; refine it from syncs and timestamps.
	hint     bool
	syncs    *mm2.SyncIndex // nil without an offset-syncs topic
	progress func(Progress)
	logger   *slog.Logger
	tap      *tap // DiffState only: records what each side yielded
	// leaders are the source's and the target's leader caches; nil: each read looks its
	// leader up.
	leaders [2]*logread.Leaders
	// txns is set by run: what the target's read_committed read passed over in the compared
	// range (nil: nothing, or the target was read read_uncommitted).
	txns *TxnPartition
	// table judges the partition as a table (judgeTable); run then sets tablePart.
	table     bool
	tablePart *TablePartition
}

// hintMargin is how many target records before the estimated start of the copy are read.
const hintMargin = 100

func (j *partJob) run(ctx context.Context, src, dst *kgo.Client) (align.PartitionResult, *offsetmap.PartitionMap, error) {
	sp := j.spec
	if sp.Fields == 0 {
		sp.Fields = offsetmap.DefaultFields
	}
	committed := !sp.ReadUncommitted
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss := startFetch(sctx, src, fetchSpec{cluster: "source", topic: sp.SourceTopic, partition: sp.Partition, from: sp.SourceFrom, to: sp.SourceTo, committed: committed, fields: sp.Fields, leaders: j.leaders[0]})
	defer ss.close()
	if j.hint {
		from, err := j.targetStart(ctx, ss, dst)
		if err != nil {
			return align.PartitionResult{Partition: sp.Partition}, nil, err
		}
		sp.TargetFrom = max(sp.TargetFrom, min(from, sp.TargetTo))
	}
	if sp.SourceFrom >= sp.SourceTo && !(sp.StrictTargetFrom && sp.StrictTargetTo) {
		sp.TargetFrom = sp.TargetTo // nothing to compare against
	}
	var tally *digest.TxnTally
	if committed {
		tally = digest.NewTxnTally(sp.Fields, sp.TargetReadUncommitted)
	}
	ts := startFetch(sctx, dst, fetchSpec{cluster: "target", topic: sp.TargetTopic, partition: sp.Partition, from: sp.TargetFrom, to: sp.TargetTo, committed: committed, fields: sp.Fields, leaders: j.leaders[1], tally: tally})
	defer ts.close()
	opt := align.Options{
		Partition: sp.Partition, Fields: sp.Fields, Window: sp.Window, History: sp.History, MaxListed: sp.MaxListed,
		SourceFrom: sp.SourceFrom, SourceTo: sp.SourceTo, TargetFrom: sp.TargetFrom, TargetTo: sp.TargetTo,
		StrictTargetFrom: sp.StrictTargetFrom, StrictTargetTo: sp.StrictTargetTo,
	}
	if j.progress != nil {
		opt.Progress = func(so, to, n int64) {
			j.progress(Progress{Partition: sp.Partition, SourceOffset: so, SourceFrom: sp.SourceFrom, SourceTo: sp.SourceTo, TargetOffset: to, Records: n})
		}
	}
	j.logger.Debug("aligning partition", "topic", sp.SourceTopic, "partition", sp.Partition,
		"source_from", sp.SourceFrom, "source_to", sp.SourceTo, "target_from", sp.TargetFrom, "target_to", sp.TargetTo)
	var sst, tst align.Stream = ss, ts
	if j.tap != nil {
		sst, tst = j.tap.src.wrap(ss), j.tap.dst.wrap(ts)
	}
	var pm *offsetmap.PartitionMap
	var pr align.PartitionResult
	var err error
	if j.table {
		var tp TablePartition
		pr, tp, err = judgeTable(ctx, sp.Partition, sst, tst, cmp.Or(sp.MaxListed, 1000))
		pr.SourceStart, pr.SourceEnd, pr.TargetStart, pr.TargetEnd = sp.SourceFrom, sp.SourceTo, sp.TargetFrom, sp.TargetTo
		j.tablePart = &tp
	} else {
		pr, pm, err = align.Partition(ctx, sst, tst, opt)
	}
	if err != nil {
		return pr, nil, err
	}
	if tally != nil {
		ts.close() // the tally is the decoding goroutine's until the read stopped
		j.txns = txnPartition(tally, sp.Partition, pr.TargetStart, pr.TargetEnd, cmp.Or(sp.MaxListed, 1000))
	}
	if j.progress != nil {
		j.progress(Progress{Partition: sp.Partition, SourceOffset: sp.SourceTo, SourceFrom: sp.SourceFrom, SourceTo: sp.SourceTo, TargetOffset: pr.TargetEnd, Records: pr.Matched*2 + pr.Missing + pr.Duplicated + pr.Mismatched*2 + pr.Extra, Done: true})
	}
	return pr, pm, nil
}

// targetStart estimates a lower bound of where the copy of the source range starts on the
// target: the one the MM2 offset syncs give for the source start (mm2.SyncIndex.LowerBound, at
// or below the first copy of that record, also after a rewind), and the first target offset
// with a timestamp at or after the first source record's (copies keep CreateTime;
// LogAppendTime only makes them later). The larger of the two, less a margin, is where the
// target is read from.
func (j *partJob) targetStart(ctx context.Context, ss *fetchStream, dst *kgo.Client) (int64, error) {
	sp := j.spec
	best := sp.TargetFrom
	if d, ok := j.syncs.LowerBound(sp.SourceTopic, sp.Partition, sp.SourceFrom); ok {
		best = max(best, d)
	}
	first, ok, err := ss.peek(ctx)
	if err != nil {
		return 0, err
	}
	if ok && first.Record != nil {
		l, err := kadm.NewClient(dst).ListOffsetsAfterMilli(ctx, first.Record.Timestamp.UnixMilli(), sp.TargetTopic)
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			return 0, fmt.Errorf("look up target topic %q partition %d by timestamp: %w", sp.TargetTopic, sp.Partition, err)
		}
		if o, ok := l.Lookup(sp.TargetTopic, sp.Partition); ok && o.Offset > best {
			best = o.Offset
		}
	}
	return max(sp.TargetFrom, best-hintMargin), nil
}
