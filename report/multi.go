package report

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/verify"
)

// WriteMulti renders the report of `kverify diff` over several topics (--all, --topics,
// --topic more than once, --shard) and of `kverify merge` in format f: the verdict over every
// topic, one row per topic with its status and counts, then only the partitions that differ
// or could not be read, with their ranges, and a total line. JSON is the value as it is.
// JUnit has one suite for the run and one case per topic.
func WriteMulti(w io.Writer, f Format, mr *verify.MultiResult, opt Options) error {
	if mr == nil {
		return errors.New("render multi-topic verify result: it is nil")
	}
	r, err := rendererOf(f)
	if err != nil {
		return err
	}
	return r.write(w, mr, func() (view, error) { return newMultiReport(opt.Title, mr), nil }, opt)
}

// multiReport is what every renderer of a MultiResult draws.
type multiReport struct {
	Title   string
	Scope   string // flow, selection, shard
	Verdict verdict
	Topics  []multiTopic
	Parts   []multiPart // the partitions that differ or could not be read
	Total   verify.MultiTotals
	Line    string // the total line
}

type multiTopic struct {
	verifyTopic
	Status     string
	Level      level
	Partitions int
}

type multiPart struct {
	Topic string
	verifyPart
}

var statusLevel = map[verify.DiffStatus]level{verify.StatusIdentical: levelOK, verify.StatusDiffers: levelBad,
	verify.StatusError: levelErr, verify.StatusNothing: levelWarn}

func newMultiReport(title string, mr *verify.MultiResult) *multiReport {
	rep := &multiReport{Title: title, Scope: multiScope(mr), Total: mr.Total}
	if rep.Title == "" {
		rep.Title = "kverify " + mr.Selection.Flow
	}
	for i := range mr.Topics {
		r := &mr.Topics[i]
		t := multiTopic{verifyTopic: newVerifyTopic(&r.Result), Status: string(r.Status), Level: statusLevel[r.Status], Partitions: len(r.Partitions)}
		if t.Level == "" {
			t.Level = levelErr
		}
		if r.Status != verify.StatusNothing {
			t.Status = t.Verdict.Headline
		}
		rep.Topics = append(rep.Topics, t)
		for _, vp := range t.Parts {
			if vp.Level == levelBad || vp.Level == levelErr {
				rep.Parts = append(rep.Parts, multiPart{Topic: r.SourceTopic, verifyPart: vp})
			}
		}
	}
	rep.Verdict = multiVerdict(mr)
	c := mr.Total.Counts
	rep.Line = fmt.Sprintf("total: %s, %s: %s matched, %s missing, %s duplicated, %s mismatched, %s extra, %s ambiguous",
		plural(int64(mr.Total.Topics), "topic", "topics"), plural(int64(mr.Total.Partitions), "partition", "partitions"),
		num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra), num(c.Ambiguous))
	return rep
}

// multiScope says what the report covers: the flow, how the topics were selected, the shard.
func multiScope(mr *verify.MultiResult) string {
	s := mr.Selection
	var b strings.Builder
	fmt.Fprintf(&b, "flow %s", s.Flow)
	switch {
	case s.TopicsRegex != "":
		fmt.Fprintf(&b, ", topics matching %s", s.TopicsRegex)
	case s.All:
		b.WriteString(", every topic of the flow")
	default:
		fmt.Fprintf(&b, ", topics %s", strings.Join(s.Names, ", "))
	}
	fmt.Fprintf(&b, " (%s selected)", plural(int64(len(s.Topics)), "topic", "topics"))
	if mr.Shard != nil {
		fmt.Fprintf(&b, ", shard %s", mr.Shard)
	}
	if mr.MergedShards > 0 {
		fmt.Fprintf(&b, ", merged from %s", plural(int64(mr.MergedShards), "shard", "shards"))
	}
	fmt.Fprintf(&b, "; compared %s, from %s to %s, %s", strings.Join(s.Compared, ", "), s.From, s.To, s.Isolation)
	return b.String()
}

func multiVerdict(mr *verify.MultiResult) verdict {
	t := mr.Total
	n := differences(t.Counts)
	v := verdict{Level: levelOK, Word: "IDENTICAL", Headline: "identical: " + plural(int64(t.Topics), "topic", "topics")}
	switch {
	case mr.EmptyShard:
		v = verdict{Level: levelWarn, Word: "EMPTY SHARD", Headline: fmt.Sprintf("0 partitions in shard %s", mr.Shard)}
		v.Details = append(v.Details, "this shard holds no partition of the selected topics: it compared nothing; merge every shard's report for the verdict")
		return v
	case t.Differs > 0:
		v.Level, v.Word = levelBad, "DIFFERS"
		v.Headline = fmt.Sprintf("%d of %d topics differ", t.Differs, t.Topics)
		if n > 0 {
			v.Headline = plural(n, "difference", "differences") + fmt.Sprintf(" in %d of %d topics", t.Differs, t.Topics)
		}
	case t.Failed > 0:
		v.Level, v.Word, v.Headline = levelErr, "INCOMPLETE", fmt.Sprintf("%d of %d topics could not be read", t.Failed, t.Topics)
	case t.Identical == 0:
		v.Level, v.Word, v.Headline = levelWarn, "NOTHING TO COMPARE", "no topic had a source record in the range asked"
	case t.NothingToCompare > 0:
		v.Level, v.Headline = levelWarn, fmt.Sprintf("identical in the %d of %d topics compared", t.Identical, t.Topics)
	}
	v.Details = append(v.Details, fmt.Sprintf("%d identical, %d differ, %d could not be read, %d had nothing to compare",
		t.Identical, t.Differs, t.Failed, t.NothingToCompare))
	v.Details = append(v.Details, countClauses(t.Counts)...)
	v.Details = append(v.Details, fmt.Sprintf("%s matched in %s", plural(t.Matched, "record", "records"), plural(int64(t.Partitions), "partition", "partitions")))
	if t.Aborted > 0 {
		v.Details = append(v.Details, abortedClause(t.Aborted, t.AbortedCopies, mr.Selection.Isolation == verify.IsolationTargetUncommitted))
	}
	var open []string
	for _, tr := range mr.Topics {
		if ps, _ := tr.OpenTransactions(); len(ps) > 0 {
			open = append(open, fmt.Sprintf("%s (%s)", tr.TargetTopic, plural(int64(len(ps)), "partition", "partitions")))
		}
	}
	if len(open) > 0 {
		if len(open) > 20 {
			open = append(open[:20], "…")
		}
		v.Details = append(v.Details, "a transaction is open on the target in "+strings.Join(open, ", ")+": not compared until it ends")
	}
	return v
}

// multiCounts are the count cells of a row: matched, missing, duplicated, mismatched, extra.
func multiCounts(c align.Counts) []string {
	return []string{num(c.Matched), num(c.Missing), num(c.Duplicated), num(c.Mismatched), num(c.Extra)}
}
