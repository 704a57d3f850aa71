package report

import (
	"fmt"
	"strings"

	"github.com/kmigrate/kmigrate/align"
	"github.com/kmigrate/kmigrate/offsetmap"
	"github.com/kmigrate/kmigrate/verify"
)

// level grades a row or a verdict; it picks colours in tables and CSS classes in HTML.
type level string

const (
	levelOK   level = "ok"   // nothing to do
	levelWarn level = "warn" // re-delivery, pending, ambiguity: safe but not exact
	levelBad  level = "bad"  // differences, data loss
	levelErr  level = "err"  // could not be determined
)

func worse(a, b level) level {
	rank := map[level]int{levelOK: 0, levelWarn: 1, levelBad: 2, levelErr: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// verdict is the line an operator reads first.
type verdict struct {
	Level    level
	Word     string   // IDENTICAL, DIFFERS, EXACT, NOT EXACT, DATA LOSS RISK, INCOMPLETE, PENDING
	Headline string   // "identical", "12 differences", "all exact", "1 behind, 0 ahead"
	Details  []string // the breakdown, one clause each
}

// verifyReport is what every verify renderer draws: one or more topics.
type verifyReport struct {
	Title   string
	Verdict verdict
	Total   align.Counts
	Topics  []verifyTopic
}

type verifyTopic struct {
	Source, Target string
	Compared       string
	Verdict        verdict
	Counts         align.Counts
	Parts          []verifyPart
	Problems       []string
	// Differing and Failed count partitions with differences and partitions not aligned;
	// NotCompared the partitions that had nothing to compare.
	Differing, Failed, NotCompared int
}

type verifyPart struct {
	P           *align.PartitionResult
	Differences int64
	Level       level
	Status      string
	Source      string // [start, end) window
	Target      string
	Details     []detail
}

// detail is one class of findings of a partition, every item rendered; renderers bound it.
type detail struct {
	Class  string // missing, duplicated, mismatched, extra, ambiguous
	Label  string // what an item means, e.g. "source offsets with no copy on the target (loss)"
	Level  level
	Prefix string // "source " or "target " when the items are bare offsets
	Items  []string
}

func differences(c align.Counts) int64 { return c.Missing + c.Duplicated + c.Mismatched + c.Extra }

func newVerifyReport(title string, rs []*verify.Result) (*verifyReport, error) {
	rep := &verifyReport{Title: title}
	if len(rs) == 0 {
		return nil, fmt.Errorf("no verify results to render")
	}
	identical, diffTopics := 0, 0
	var failed int
	for i, r := range rs {
		if r == nil {
			return nil, fmt.Errorf("verify result %d is nil", i)
		}
		t := newVerifyTopic(r)
		rep.Total.Add(t.Counts)
		if t.Verdict.Level == levelOK {
			identical++
		} else {
			diffTopics++
		}
		failed += t.Failed
		rep.Topics = append(rep.Topics, t)
	}
	if rep.Title == "" {
		if len(rs) == 1 {
			rep.Title = fmt.Sprintf("kverify %s → %s", rs[0].SourceTopic, rs[0].TargetTopic)
		} else {
			rep.Title = fmt.Sprintf("kverify: %d topics", len(rs))
		}
	}
	if len(rs) == 1 {
		rep.Verdict = rep.Topics[0].Verdict
		return rep, nil
	}
	v := verdict{Level: levelOK, Word: "IDENTICAL", Headline: "identical"}
	if n := differences(rep.Total); n > 0 {
		v.Level, v.Word, v.Headline = levelBad, "DIFFERS", plural(n, "difference", "differences")
	} else if identical < len(rs) {
		v.Level, v.Word, v.Headline = levelErr, "INCOMPLETE", "not identical"
	}
	v.Details = append(v.Details, fmt.Sprintf("%d of %d topics identical", identical, len(rs)))
	v.Details = append(v.Details, countClauses(rep.Total)...)
	if failed > 0 {
		v.Details = append(v.Details, plural(int64(failed), "partition", "partitions")+" could not be aligned")
	}
	rep.Verdict = v
	return rep, nil
}

// countClauses breaks differences down by class, naming what each means for an operator.
func countClauses(c align.Counts) []string {
	var out []string
	if c.Missing > 0 {
		out = append(out, num(c.Missing)+" missing (lost on the target)")
	}
	if c.Duplicated > 0 {
		out = append(out, num(c.Duplicated)+" duplicated (read twice on the target)")
	}
	if c.Mismatched > 0 {
		out = append(out, num(c.Mismatched)+" mismatched (copied with different content)")
	}
	if c.Extra > 0 {
		out = append(out, num(c.Extra)+" extra (not from the source)")
	}
	return out
}

// keyClauses break a table's differences down by class: counts of keys.
func keyClauses(c align.Counts) []string {
	var out []string
	if c.Missing > 0 {
		out = append(out, plural(c.Missing, "key", "keys")+" missing (a latest value on the source, no record on the target: lost)")
	}
	if c.Mismatched > 0 {
		out = append(out, plural(c.Mismatched, "key", "keys")+" with another latest record on the target")
	}
	if c.Extra > 0 {
		out = append(out, plural(c.Extra, "key", "keys")+" on the target only")
	}
	return out
}

// newVerifyTopic is the view of the result r of one topic: its partitions, counts and verdict.
func newVerifyTopic(r *verify.Result) verifyTopic {
	t := verifyTopic{
		Source:   r.SourceTopic,
		Target:   r.TargetTopic,
		Compared: strings.Join(r.Compared, ", "),
		Problems: r.Problems,
	}
	txns := map[int32]*verify.TxnPartition{}
	for i := range r.Transactions {
		txns[r.Transactions[i].Partition] = &r.Transactions[i]
	}
	for i := range r.Partitions {
		p := newVerifyPart(&r.Partitions[i])
		p.Details = append(p.Details, txnDetails(txns[p.P.Partition])...)
		t.Counts.Add(p.P.Counts)
		if p.P.Err != "" {
			t.Failed++
		} else if p.P.NotCompared != "" {
			t.NotCompared++
		} else if p.Differences > 0 {
			t.Differing++
		}
		t.Parts = append(t.Parts, p)
	}
	// Summary is what verify computed and is authoritative; the sum of the rows stands in
	// only for a hand-built result that left it empty.
	if r.Summary != (align.Counts{}) {
		t.Counts = r.Summary
	}
	if r.Judged == verify.JudgeTable {
		tables := map[int32]*verify.TablePartition{}
		for i := range r.Tables {
			tables[r.Tables[i].Partition] = &r.Tables[i]
		}
		for i := range t.Parts {
			p := &t.Parts[i]
			p.Details = append(p.Details, tableDetails(tables[p.P.Partition])...)
			if p.Differences > 0 && p.P.Err == "" {
				p.Status = plural(p.Differences, "key differs", "keys differ")
			}
		}
	}
	t.Verdict = topicVerdict(&t, r)
	t.Verdict.Details = append(t.Verdict.Details, txnClauses(r)...)
	return t
}

// tableClauses say what a table judgement compared: keys, and the records each side keeps
// beyond the table, which are neither missing nor extra.
func tableClauses(r *verify.Result) []string {
	var src, dst, srcSup, dstSup, cleaned int64
	for _, tp := range r.Tables {
		src, dst, srcSup, dstSup, cleaned = src+tp.SourceRecords, dst+tp.TargetRecords, srcSup+tp.SourceSuperseded, dstSup+tp.TargetSuperseded, cleaned+tp.TombstonesCleaned
	}
	out := []string{fmt.Sprintf("judged as a table, the latest record of every key (%s); counts are of keys", r.JudgedWhy),
		fmt.Sprintf("%s on the source, %s on the target; superseded by a later record of their key, so compacted on one side and not counted as missing or extra: %s on the source, %s on the target",
			plural(src, "record", "records"), plural(dst, "record", "records"), num(srcSup), num(dstSup))}
	if cleaned > 0 {
		out = append(out, plural(cleaned, "key deleted by a tombstone on one side and absent on the other (the same table)", "keys deleted by a tombstone on one side and absent on the other (the same table)"))
	}
	return out
}

// tableDetails lists a table partition's keys that are not the same (tp nil: none).
func tableDetails(tp *verify.TablePartition) []detail {
	if tp == nil || len(tp.Differences) == 0 {
		return nil
	}
	labels := map[string]string{
		"differs": "keys whose latest record differs: source offset → target offset of each side's latest",
		"missing": "keys with a latest value on the source and no record on the target (loss): source offsets",
		"extra":   "keys with a latest value on the target only: target offsets",
	}
	byClass := map[string]*detail{}
	var ds []detail
	for _, d := range tp.Differences {
		if byClass[d.Class] == nil {
			ds = append(ds, detail{Class: "key " + d.Class, Label: labels[d.Class], Level: levelBad})
			byClass[d.Class] = &ds[len(ds)-1]
		}
		item := fmt.Sprintf("source %d → target %d", d.SourceOffset, d.TargetOffset)
		switch d.Class {
		case "missing":
			item = fmt.Sprintf("source %d", d.SourceOffset)
		case "extra":
			item = fmt.Sprintf("target %d", d.TargetOffset)
		}
		byClass[d.Class].Items = append(byClass[d.Class].Items, item)
	}
	if tp.Truncated {
		ds[len(ds)-1].Items = append(ds[len(ds)-1].Items, "…")
	}
	return ds
}

// abortedClause says what n aborted records on the target, copies of them copies of
// committed records, mean for consumers; uncommitted: the target was compared as
// read_uncommitted consumers read it (--target-read-uncommitted).
func abortedClause(n, copies int64, uncommitted bool) string {
	s := fmt.Sprintf("%s on the target (%s): consumers reading read_uncommitted (the Java default) would read them; read_committed consumers do not",
		plural(n, "aborted record", "aborted records"), plural(copies, "copy of a committed record", "copies of committed records"))
	if uncommitted {
		s += "; the target was compared as they read it (--target-read-uncommitted): copies of source records are counted duplicated, the others extra"
	}
	return s
}

// txnClauses are the verdict's clauses on the aborted records and open transactions of the
// target of r; none when it had neither.
func txnClauses(r *verify.Result) []string {
	var out []string
	if r.Aborted > 0 {
		out = append(out, abortedClause(r.Aborted, r.AbortedCopies, r.TargetReadUncommitted))
	}
	if ps, n := r.OpenTransactions(); len(ps) > 0 {
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			names = append(names, fmt.Sprint(p))
		}
		if len(names) > 20 {
			names = append(names[:20], "…")
		}
		word := "partitions"
		if len(ps) == 1 {
			word = "partition"
		}
		out = append(out, fmt.Sprintf("a transaction is open on the target in %s %s (%s past the last stable offset): not compared until it ends",
			word, strings.Join(names, ", "), plural(n, "record", "records")))
	}
	return out
}

// txnDetails lists a target partition's aborted records and open transaction (tp nil: none).
func txnDetails(tp *verify.TxnPartition) []detail {
	if tp == nil {
		return nil
	}
	var ds []detail
	if len(tp.AbortedRanges) > 0 {
		d := detail{Class: "aborted", Label: fmt.Sprintf("target offsets of aborted transactions, read by read_uncommitted consumers (%s, %s)",
			plural(tp.Aborted, "record", "records"), plural(tp.AbortedCopies, "copy of a committed record", "copies of committed records")),
			Level: levelWarn, Prefix: "target "}
		for _, r := range tp.AbortedRanges {
			d.Items = append(d.Items, span(r.From, r.To))
		}
		if tp.Truncated {
			d.Items = append(d.Items, "…")
		}
		ds = append(ds, d)
	}
	if o := tp.OpenTransaction; o != nil {
		ds = append(ds, detail{Class: "open txn", Label: "target offsets of a transaction still open, not compared until it ends", Level: levelWarn,
			Prefix: "target ", Items: []string{span(o.From, o.To)}})
	}
	return ds
}

// topicVerdict is the verdict on topic t, whose partitions and counts are set, of result r.
func topicVerdict(t *verifyTopic, r *verify.Result) verdict {
	n := differences(t.Counts)
	v := verdict{Level: levelOK, Word: "IDENTICAL", Headline: "identical"}
	switch {
	case n > 0:
		v.Level, v.Word, v.Headline = levelBad, "DIFFERS", plural(n, "difference", "differences")
	case !r.Identical || t.Failed > 0 || len(r.Problems) > 0:
		v.Level, v.Word, v.Headline = levelErr, "INCOMPLETE", "not identical"
	case t.NotCompared > 0:
		// Identical where compared: the partitions with nothing to compare are named, never
		// called identical.
		v.Level, v.Headline = levelWarn, fmt.Sprintf("identical in the %d of %d partitions compared", len(t.Parts)-t.NotCompared, len(t.Parts))
	}
	table := r.Judged == verify.JudgeTable
	switch {
	case n > 0 && table:
		v.Headline = plural(n, "key differs", "keys differ")
		v.Details = append(v.Details, keyClauses(t.Counts)...)
		v.Details = append(v.Details, fmt.Sprintf("in %d of %d partitions", t.Differing, len(t.Parts)))
	case n > 0:
		v.Details = append(v.Details, countClauses(t.Counts)...)
		v.Details = append(v.Details, fmt.Sprintf("in %d of %d partitions", t.Differing, len(t.Parts)))
	case t.Failed == 0 && len(r.Problems) == 0 && table:
		if v.Level == levelOK {
			v.Headline = "identical table"
		}
		v.Details = append(v.Details, fmt.Sprintf("%s with the same latest record in %s",
			plural(t.Counts.Matched, "key", "keys"), plural(int64(len(t.Parts)-t.NotCompared), "partition", "partitions")))
	case t.Failed == 0 && len(r.Problems) == 0:
		v.Details = append(v.Details, fmt.Sprintf("%s matched in %s",
			plural(t.Counts.Matched, "record", "records"), plural(int64(len(t.Parts)-t.NotCompared), "partition", "partitions")))
	}
	if table {
		v.Details = append(v.Details, tableClauses(r)...)
	}
	if t.NotCompared > 0 {
		v.Details = append(v.Details, fmt.Sprintf("%s not compared, no source record in the range asked: %s",
			plural(int64(t.NotCompared), "partition", "partitions"), notComparedList(t.Parts)))
	}
	if t.Failed > 0 {
		if n == 0 {
			v.Level = levelErr
		}
		v.Details = append(v.Details, plural(int64(t.Failed), "partition", "partitions")+" could not be aligned")
	}
	for _, p := range r.Problems {
		if n == 0 {
			v.Level = levelErr
		}
		v.Details = append(v.Details, oneLine(p))
	}
	if t.Counts.Ambiguous > 0 {
		v.Details = append(v.Details, plural(t.Counts.Ambiguous, "matched record is", "matched records are")+
			" ambiguous (identical neighbours)")
	}
	return v
}

// notComparedList names the first 20 of parts that were not compared, "…" standing for the rest.
func notComparedList(parts []verifyPart) string {
	var ps []string
	for _, p := range parts {
		if p.P.NotCompared != "" {
			ps = append(ps, fmt.Sprint(p.P.Partition))
		}
	}
	if len(ps) > 20 {
		ps = append(ps[:20], "…")
	}
	return strings.Join(ps, ", ")
}

// newVerifyPart is the view of partition p: its status and details.
func newVerifyPart(p *align.PartitionResult) verifyPart {
	vp := verifyPart{
		P:           p,
		Differences: differences(p.Counts),
		Source:      window(p.SourceStart, p.SourceEnd),
		Target:      window(p.TargetStart, p.TargetEnd),
	}
	switch {
	case p.Err != "":
		// The error itself is long; it is shown with the partition's details.
		vp.Level, vp.Status = levelErr, "error: not aligned"
	case vp.Differences > 0:
		vp.Level, vp.Status = levelBad, plural(vp.Differences, "difference", "differences")
	case p.NotCompared != "":
		vp.Level, vp.Status = levelWarn, "nothing to compare"
		vp.Details = append(vp.Details, detail{Class: "not compared", Label: "why the partition proves nothing", Level: levelWarn,
			Items: []string{strings.TrimPrefix(p.NotCompared, "nothing to compare: ")}})
	default:
		vp.Level, vp.Status = levelOK, "identical"
		if p.Ambiguous > 0 {
			vp.Status += fmt.Sprintf(" (%s ambiguous)", num(p.Ambiguous))
		}
	}
	vp.Details = append(vp.Details, offsetDetails(p)...)
	return vp
}

// offsetDetails lists, one detail per kind, the offsets of p that are not plain matches (missing, duplicated, mismatched, extra, skipped, ambiguous).
func offsetDetails(p *align.PartitionResult) []detail {
	var ds []detail
	if len(p.MissingRanges) > 0 {
		d := detail{Class: "missing", Label: "source offsets with no copy on the target (loss)", Level: levelBad, Prefix: "source "}
		for _, r := range p.MissingRanges {
			d.Items = append(d.Items, span(r.From, r.To))
		}
		ds = append(ds, d)
	}
	if len(p.Duplicates) > 0 {
		d := detail{Class: "duplicated", Label: "target records that repeat an already copied source record", Level: levelBad}
		for _, run := range copyRuns(p.Duplicates) {
			d.Items = append(d.Items, fmt.Sprintf("target %s = source %s", span(run.t0, run.t1), span(run.s0, run.s1)))
		}
		ds = append(ds, d)
	}
	if len(p.Mismatches) > 0 {
		d := detail{Class: "mismatched", Label: "aligned records whose content differs, with the fields", Level: levelBad}
		for _, run := range mismatchRuns(p.Mismatches) {
			d.Items = append(d.Items, fmt.Sprintf("source %s → target %s (%s)",
				span(run.s0, run.s1), span(run.t0, run.t1), run.fields))
		}
		ds = append(ds, d)
	}
	if len(p.ExtraRanges) > 0 {
		d := detail{Class: "extra", Label: "target offsets with no source record", Level: levelBad, Prefix: "target "}
		for _, r := range p.ExtraRanges {
			d.Items = append(d.Items, span(r.From, r.To))
		}
		ds = append(ds, d)
	}
	if p.TargetSkipped > 0 {
		d := detail{Class: "not compared", Label: "target records before the copy of the source range began", Level: levelOK, Prefix: "target "}
		item := plural(p.TargetSkipped, "record", "records")
		if r := p.TargetSkippedRange; r != nil {
			item = span(r.From, r.To) + " (" + item + ")"
		}
		d.Items = []string{item}
		ds = append(ds, d)
	}
	if len(p.AmbiguousRanges) > 0 {
		d := detail{Class: "ambiguous", Label: "target offsets matched within runs of identical records", Level: levelWarn, Prefix: "target "}
		for _, r := range p.AmbiguousRanges {
			d.Items = append(d.Items, span(r.From, r.To))
		}
		ds = append(ds, d)
	}
	return ds
}

// run is a stretch in which source and target offsets both advance by one.
type run struct {
	s0, s1, t0, t1 int64
	fields         string
}

func copyRuns(cs []offsetmap.Copy) []run {
	var out []run
	for _, c := range cs {
		if n := len(out); n > 0 && out[n-1].s1+1 == c.Source && out[n-1].t1+1 == c.Target {
			out[n-1].s1, out[n-1].t1 = c.Source, c.Target
			continue
		}
		out = append(out, run{s0: c.Source, s1: c.Source, t0: c.Target, t1: c.Target})
	}
	return out
}

func mismatchRuns(ms []align.Mismatch) []run {
	var out []run
	for _, m := range ms {
		f := strings.Join(m.Fields, ", ")
		if n := len(out); n > 0 && out[n-1].s1+1 == m.SourceOffset && out[n-1].t1+1 == m.TargetOffset && out[n-1].fields == f {
			out[n-1].s1, out[n-1].t1 = m.SourceOffset, m.TargetOffset
			continue
		}
		out = append(out, run{s0: m.SourceOffset, s1: m.SourceOffset, t0: m.TargetOffset, t1: m.TargetOffset, fields: f})
	}
	return out
}
