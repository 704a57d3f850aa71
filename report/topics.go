package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/kmigrate/kmigrate/report/junit"
	"github.com/kmigrate/kmigrate/verify"
)

// topicsReport draws `kverify topics` (verify.Preflight): the brokers of both clusters, one
// row per topic, and every finding with the topic it belongs to.
type topicsReport struct {
	Title    string
	R        *verify.PreflightResult
	Verdict  verdict
	Brokers  []topicsBroker
	Topics   []topicsRow
	Findings []topicsFinding // cluster findings first, then per topic in topic order
	Notes    []string        // "topic: note"
	Risks    int
	Warnings int
	Info     int
}

type topicsBroker struct {
	Cluster, Side string
	B             verify.Broker
	Rack          string
}

type topicsRow struct {
	T          verify.TopicCheck
	Level      level
	Partitions string // "3 / 2"
	RF         string
}

type topicsFinding struct {
	Topic string // "" for a cluster finding
	Where string // the topic, or "clusters"
	F     verify.Finding
	Level level
	Syncs string // "yes", "no" or ""
}

func severityLevel(s verify.Severity) level {
	switch s {
	case verify.SeverityRisk:
		return levelBad
	case verify.SeverityWarning:
		return levelWarn
	}
	return levelOK
}

func newTopicsReport(title string, r *verify.PreflightResult) *topicsReport {
	rep := &topicsReport{Title: title, R: r}
	if rep.Title == "" {
		rep.Title = "kverify topics " + r.Flow
	}
	rep.Brokers = topicsBrokers(r)
	addFinding := func(topic, where string, f verify.Finding) {
		tf := topicsFinding{Topic: topic, Where: where, F: f, Level: severityLevel(f.Severity)}
		if f.MM2Syncs != nil {
			tf.Syncs = map[bool]string{true: "yes", false: "no"}[*f.MM2Syncs]
		}
		switch f.Severity {
		case verify.SeverityRisk:
			rep.Risks++
		case verify.SeverityWarning:
			rep.Warnings++
		default:
			rep.Info++
		}
		rep.Findings = append(rep.Findings, tf)
	}
	for _, f := range r.ClusterFindings {
		addFinding("", "clusters", f)
	}
	counts := map[verify.TopicStatus]int{}
	for _, t := range r.Topics {
		row := topicsRow{T: t, Level: levelOK,
			Partitions: fmt.Sprintf("%d / %d", t.SourcePartitions, t.TargetPartitions),
			RF:         fmt.Sprintf("%d / %d", t.SourceRF, t.TargetRF)}
		switch t.Status {
		case verify.TopicRisk, verify.TopicMissing:
			row.Level = levelBad
		case verify.TopicDiffers:
			row.Level = levelWarn
		}
		if t.Status == verify.TopicMissing {
			row.Partitions = fmt.Sprintf("%d / -", t.SourcePartitions)
			row.RF = fmt.Sprintf("%d / -", t.SourceRF)
		}
		counts[t.Status]++
		rep.Topics = append(rep.Topics, row)
		for _, f := range t.Findings {
			addFinding(t.SourceTopic, t.SourceTopic, f)
		}
		for _, n := range t.Notes {
			rep.Notes = append(rep.Notes, t.SourceTopic+": "+n)
		}
	}
	rep.Verdict = topicsVerdict(rep, r, counts)
	return rep
}

// topicsBrokers lists the brokers of both clusters of r, source first, with "-" for no rack.
func topicsBrokers(r *verify.PreflightResult) []topicsBroker {
	var brokers []topicsBroker
	for _, side := range []struct {
		name string
		c    verify.ClusterCheck
	}{{"source", r.Source}, {"target", r.Target}} {
		for _, b := range side.c.Brokers {
			rack := b.Rack
			if rack == "" {
				rack = "-"
			}
			brokers = append(brokers, topicsBroker{Cluster: side.c.Alias, Side: side.name, B: b, Rack: rack})
		}
	}
	return brokers
}

// topicsVerdict judges the report rep of r by its findings and sums up its topics, counted by status in counts, and clusters.
func topicsVerdict(rep *topicsReport, r *verify.PreflightResult, counts map[verify.TopicStatus]int) verdict {
	v := verdict{Level: levelOK, Word: "ALL OK", Headline: "no findings"}
	if n := len(rep.Findings); n > 0 {
		v.Word, v.Level = "FINDINGS", levelWarn
		if rep.Risks > 0 {
			v.Level = levelBad
		}
		v.Headline = fmt.Sprintf("%s: %s, %s, %d info", plural(int64(n), "finding", "findings"),
			plural(int64(rep.Risks), "risk", "risks"), plural(int64(rep.Warnings), "warning", "warnings"), rep.Info)
	}
	v.Details = append(v.Details, fmt.Sprintf("%s: %d ok, %d differ, %d at risk, %d missing on the target",
		plural(int64(len(r.Topics)), "topic", "topics"), counts[verify.TopicOK], counts[verify.TopicDiffers], counts[verify.TopicRisk], counts[verify.TopicMissing]))
	v.Details = append(v.Details, "source "+clusterSummary(r.Source)+"; target "+clusterSummary(r.Target))
	return v
}

// clusterSummary is "old: 3 brokers, Kafka 2.3".
func clusterSummary(c verify.ClusterCheck) string {
	var vs []string
	for _, b := range c.Brokers {
		if !containsString(vs, b.Version) {
			vs = append(vs, b.Version)
		}
	}
	return fmt.Sprintf("%s: %s, Kafka %s", c.Alias, plural(int64(len(c.Brokers)), "broker", "brokers"), strings.Join(vs, " and "))
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func writeTopics(w io.Writer, f Format, r *verify.PreflightResult, opt Options) error {
	rep := newTopicsReport(opt.Title, r)
	switch f {
	case Table:
		return topicsTable(w, rep, opt)
	case Markdown:
		return topicsMarkdown(w, rep, opt)
	case HTML:
		return templates.ExecuteTemplate(w, "page.tmpl", htmlPage{Title: rep.Title, CSS: pageCSS, Verdict: rep.Verdict,
			Kind: "topics", Topics: rep,
			Subtitle: "preflight of flow " + r.Flow + ": every mirrored topic's metadata and configs on both clusters, and what MirrorMaker 2 3.7.1 would sync"})
	default:
		return topicsJUnit(w, rep)
	}
}

func topicsTable(w io.Writer, rep *topicsReport, opt Options) error {
	p := painter(opt.Color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", p.bold(rep.Title))
	writeVerdict(&b, p, rep.Verdict)

	tw := newTable(p)
	tw.AppendHeader(table.Row{"Cluster", "Broker", "Address", "Rack", "Version"})
	for _, br := range rep.Brokers {
		tw.AppendRow(table.Row{br.Side + " " + br.Cluster, br.B.ID, fmt.Sprintf("%s:%d", br.B.Host, br.B.Port), br.Rack, br.B.Version})
	}
	b.WriteString("\n" + tw.Render() + "\n")

	if len(rep.Topics) > 0 {
		// Narrow terminals wrap names and headers; no column is dropped.
		ft := fitTable{header: table.Row{"Source topic", "Target topic", "Status", "Partitions (source / target)", "Replication (source / target)", "Findings"},
			give: []give{{wrap: 12}, {wrap: 12}, {}, {wrap: 10}, {wrap: 11}, {}}, cfg: numericColumns(6)}
		for _, t := range rep.Topics {
			ft.rows = append(ft.rows, table.Row{t.T.SourceTopic, t.T.TargetTopic, p.paint(t.Level, string(t.T.Status)), t.Partitions, t.RF, len(t.T.Findings)})
		}
		b.WriteString("\n" + ft.render(newTable(p), opt.Width) + "\n")
	}
	if len(rep.Findings) > 0 {
		// Narrow terminals drop "MM2 syncs" first (the note says what to do), then wrap.
		ft := fitTable{header: table.Row{"Topic", "Field", "Source", "Target", "Severity", "MM2 syncs", "Note"},
			give: []give{{wrap: 12}, {wrap: 10}, {wrap: 10}, {wrap: 10}, {}, {drop: 1}, {wrap: 16}},
			cfg: []table.ColumnConfig{
				{Number: 3, WidthMax: 24, WidthMaxEnforcer: text.WrapSoft},
				{Number: 4, WidthMax: 24, WidthMaxEnforcer: text.WrapSoft},
				{Number: 7, WidthMax: 60, WidthMaxEnforcer: text.WrapSoft}}}
		for _, f := range rep.Findings {
			ft.rows = append(ft.rows, table.Row{f.Where, f.F.Field, f.F.Source, f.F.Target, p.paint(f.Level, string(f.F.Severity)), f.Syncs, oneLine(f.F.Note)})
		}
		tw := newTable(p)
		tw.Style().Options.SeparateRows = true
		b.WriteString("\n" + ft.render(tw, opt.Width) + "\n")
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n")
		l := bounded(rep.Notes, opt.maxNotes())
		for _, n := range l.Items {
			fmt.Fprintf(&b, "  %s\n", p.dim(n))
		}
		if l.More > 0 {
			fmt.Fprintf(&b, "  … and %d more (see the JSON report)\n", l.More)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func topicsMarkdown(w io.Writer, rep *topicsReport, opt Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(rep.Title))
	mdVerdict(&b, rep.Verdict)
	b.WriteString("## Brokers\n\n")
	mdHeader(&b, "Cluster", ">Broker", "Address", "Rack", "Version")
	for _, br := range rep.Brokers {
		mdRow(&b, mdEscape(br.Side+" "+br.Cluster), fmt.Sprint(br.B.ID), mdEscape(fmt.Sprintf("%s:%d", br.B.Host, br.B.Port)), mdEscape(br.Rack), mdEscape(br.B.Version))
	}
	b.WriteString("\n")
	if len(rep.Topics) > 0 {
		b.WriteString("## Topics\n\n")
		mdHeader(&b, "Source topic", "Target topic", "Status", "Partitions (source / target)", "Replication (source / target)", ">Findings")
		for _, t := range rep.Topics {
			mdRow(&b, mdEscape(t.T.SourceTopic), mdEscape(t.T.TargetTopic), mdBadge[t.Level]+" "+string(t.T.Status), t.Partitions, t.RF, fmt.Sprint(len(t.T.Findings)))
		}
		b.WriteString("\n")
	}
	if len(rep.Findings) > 0 {
		b.WriteString("## Findings\n\n")
		mdHeader(&b, "Topic", "Field", "Source", "Target", "Severity", "MM2 syncs", "Note")
		for _, f := range rep.Findings {
			mdRow(&b, mdEscape(f.Where), mdEscape(f.F.Field), mdEscape(f.F.Source), mdEscape(f.F.Target),
				mdBadge[f.Level]+" "+string(f.F.Severity), f.Syncs, mdEscape(f.F.Note))
		}
		b.WriteString("\n")
	}
	if len(rep.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		l := bounded(rep.Notes, opt.maxNotes())
		for _, n := range l.Items {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
		if l.More > 0 {
			fmt.Fprintf(&b, "- … and %d more (see the JSON report)\n", l.More)
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// topicsJUnit writes one suite with one case per topic (ok passes; differs, risk and missing
// fail, typed by the status, with every finding as detail) and one case for the clusters.
func topicsJUnit(w io.Writer, rep *topicsReport) error {
	s := junit.Suite{Name: rep.Title, Properties: junit.Props(
		junit.Property{Name: "flow", Value: rep.R.Flow},
		junit.Property{Name: "source_cluster", Value: rep.R.Source.Alias},
		junit.Property{Name: "target_cluster", Value: rep.R.Target.Alias},
		junit.Property{Name: "verdict", Value: rep.Verdict.Headline},
	)}
	detail := func(fs []verify.Finding, notes []string) string {
		var b strings.Builder
		for _, f := range fs {
			fmt.Fprintf(&b, "%s %s: source %q, target %q", f.Severity, f.Field, f.Source, f.Target)
			if f.MM2Syncs != nil {
				fmt.Fprintf(&b, ", MM2 syncs: %v", *f.MM2Syncs)
			}
			fmt.Fprintf(&b, "\n  %s\n", f.Note)
		}
		for _, n := range notes {
			b.WriteString("note: " + n + "\n")
		}
		return b.String()
	}
	summary := func(fs []verify.Finding) string {
		var parts []string
		for _, f := range fs {
			parts = append(parts, string(f.Severity)+" "+f.Field)
		}
		return strings.Join(parts, ", ")
	}
	cc := junit.Case{Name: "clusters", Classname: "kverify.topics"}
	if fs := rep.R.ClusterFindings; len(fs) > 0 {
		cc.Failure = &junit.Problem{Type: "differs", Message: summary(fs), Body: detail(fs, nil)}
	} else {
		cc.SystemOut = junit.Text(rep.Verdict.Details[len(rep.Verdict.Details)-1])
	}
	s.Cases = append(s.Cases, cc)
	for _, t := range rep.Topics {
		c := junit.Case{Name: t.T.SourceTopic + " → " + t.T.TargetTopic, Classname: "kverify.topics"}
		if t.T.Status == verify.TopicOK {
			c.SystemOut = junit.Text(detail(nil, t.T.Notes))
		} else {
			c.Failure = &junit.Problem{Type: string(t.T.Status), Message: string(t.T.Status) + ": " + summary(t.T.Findings), Body: detail(t.T.Findings, t.T.Notes)}
		}
		s.Cases = append(s.Cases, c)
	}
	return junit.Write(w, &junit.Suites{Name: rep.Title, Suites: []junit.Suite{s}})
}
