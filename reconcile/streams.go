package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmigrate/kmigrate/mm2"
)

// App is a Kafka Streams application: its group (classic, or a streams group of KIP-1071) is
// named by its application.id, commits on its input and repartition topics, and keeps its
// state stores in changelog topics named <application.id>-<store>-changelog. Kafka Streams
// finds its internal topics by name only, so on the target they must exist under the same
// names and with the same partition counts, and the application must switch as a whole: Plan
// judges it as one unit, Apply commits every partition of it or none.
type App struct {
	ID string `json:"application_id"`
	// RecognisedBy says how the group was recognised as an application.
	RecognisedBy string `json:"recognised_by"`
	// Inputs are the topics it commits on that are not its own; Repartition its repartition
	// topics; Changelogs its changelog topics (and other internal topics it owns, such as a
	// foreign-key join's subscription topics), from the source's topic names.
	Inputs      []string `json:"input_topics"`
	Repartition []string `json:"repartition_topics"`
	Changelogs  []string `json:"changelog_topics"`
	// State holds one entry per changelog partition, judged as a group partition committed
	// at the source's log end: E is the target offset that names, on the target, what the
	// source's changelog holds to its end (the offset a state store restored from the target
	// has read to), Status pending while the mirror has not copied the changelog to its end.
	State []Partition `json:"state"`
	// Checkpoints are the positions of a state directory kept from the source
	// (Config.StateOffsets), each judged as a group partition committed at the offset after
	// the last changelog record its store holds: E is where the store restored from the
	// target resumes (PlanStateDir).
	Checkpoints []Partition `json:"checkpoints,omitempty"`
	// Problems are the checks that failed: each one stops the application's switch.
	Problems []string `json:"problems,omitempty"`
	// Ready is true when every check passed and E(G) is known for every partition of the
	// group and every changelog partition: Apply commits the whole application.
	Ready bool `json:"ready"`
	// LocalState says what a state directory kept from the source does on the target and
	// what to do with it.
	LocalState []string `json:"local_state"`
}

// internalOf tells whether topic is an internal topic of application id (Kafka Streams names
// them <application.id>-<name><suffix>: repartition topics, changelogs, and a foreign-key
// join's subscription registration and response topics), and its kind.
func internalOf(id, topic string) (kind string, ok bool) {
	rest, ok := strings.CutPrefix(topic, id+"-")
	if !ok || rest == "" {
		return "", false
	}
	switch {
	case strings.HasSuffix(rest, "-repartition"):
		return "repartition", true
	case strings.HasSuffix(rest, "-changelog"):
		return "changelog", true
	case strings.HasSuffix(rest, "-topic") && strings.Contains(rest, "-SUBSCRIPTION-"):
		return "changelog", true // a foreign-key join's subscription topic: owned state
	}
	return "", false
}

// findApps recognises the Kafka Streams applications among the groups: a streams group
// (KIP-1071), whose topics are those of the topology its group coordinator keeps, and a group
// whose source topics include internal topics named after it (Kafka Streams names them
// <application.id>-...-repartition or -changelog, and the application.id is the group). It
// lists the source's topics once and gives each internal topic to one application (ownerOf).
func (p *planner) findApps(ctx context.Context, st *planState, groups []string) (map[string]*App, error) {
	topics, err := p.src.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("source cluster: list topics to find Kafka Streams applications: %w", err)
	}
	names := topics.Names()
	slices.Sort(names)
	selected := map[string]bool{}
	for _, g := range groups {
		selected[g] = true
	}
	apps := map[string]*App{}
	owner := map[string]string{} // internal topic -> the application it belongs to
	for _, t := range names {
		g := p.ownerOf(t)
		if g == "" {
			continue
		}
		owner[t] = g
		if !selected[g] {
			continue
		}
		app := apps[g]
		if app == nil {
			app = &App{ID: g, Inputs: []string{}, Repartition: []string{}, Changelogs: []string{}, State: []Partition{},
				RecognisedBy: fmt.Sprintf("internal topics named after the group on the source (%s-...-repartition, -changelog)", g)}
			apps[g] = app
		}
		if kind, _ := internalOf(g, t); kind == "repartition" {
			app.Repartition = append(app.Repartition, t)
		} else {
			app.Changelogs = append(app.Changelogs, t)
		}
	}
	for g, app := range apps {
		for t := range st.srcOffs[g].Fetched {
			if owner[t] != g {
				app.Inputs = append(app.Inputs, t)
			}
		}
		slices.Sort(app.Inputs)
	}
	for _, g := range groups {
		if d := st.srcDesc[g]; d.Type == mm2.GroupTypeStreams {
			apps[g] = streamsGroupApp(g, d.Topology, apps[g], st.srcOffs[g])
		}
	}
	return apps, nil
}

// streamsGroupApp is the application of streams group g: its topics from the topology its
// coordinator keeps; without one (never initialized), named as findApps found them (named, nil
// when none) and its inputs from its commits.
func streamsGroupApp(g string, t *mm2.StreamsTopology, named *App, offs kadm.FetchOffsetsResponse) *App {
	if t != nil {
		return &App{ID: g, Inputs: slices.Clone(t.Inputs), Repartition: slices.Clone(t.Repartition), Changelogs: slices.Clone(t.Changelogs), State: []Partition{},
			RecognisedBy: fmt.Sprintf("a streams group (KIP-1071, group.protocol=streams): its topics are those of the topology the source's group coordinator keeps (epoch %d)", t.Epoch)}
	}
	app := named
	if app == nil {
		app = &App{ID: g, Inputs: []string{}, Repartition: []string{}, Changelogs: []string{}, State: []Partition{}}
		for t := range offs.Fetched {
			app.Inputs = append(app.Inputs, t)
		}
		slices.Sort(app.Inputs)
	}
	app.RecognisedBy = "a streams group (KIP-1071, group.protocol=streams) whose topology the source's group coordinator has not initialized: its topics from its commits and the internal topics named after it"
	return app
}

// ownerOf is the application an internal topic belongs to: of the source's groups whose name
// it is named after, the longest (a topic orders-v2-counts-changelog is orders-v2's, not
// orders'); "" when none.
func (p *planner) ownerOf(topic string) string {
	owner := ""
	for g := range p.srcListed {
		if _, ok := internalOf(g, topic); ok && len(g) > len(owner) {
			owner = g
		}
	}
	return owner
}

// changelogPartitions are the changelog partitions of app as group partitions committed at
// the source's log end, to be judged like the group's own (judgeAll).
func (p *planner) changelogPartitions(app *App, st *planState) {
	for _, t := range app.Changelogs {
		for _, o := range st.srcEnds[t] {
			if o.Err != nil {
				app.Problems = append(app.Problems, fmt.Sprintf("changelog %s/%d: source log end not listed: %v", t, o.Partition, o.Err))
				continue
			}
			app.State = append(app.State, p.partition(app.ID, kadm.OffsetResponse{Offset: kadm.Offset{Topic: t, Partition: o.Partition, At: o.Offset}},
				kadm.FetchOffsetsResponse{}, st))
		}
	}
	slices.SortFunc(app.State, func(a, b Partition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// checkpointPartitions are the positions of app's kept state directory (Config.StateOffsets)
// as group partitions committed after the last record each store holds, to be judged like
// the group's own (judgeAll).
func (p *planner) checkpointPartitions(app *App, st *planState) {
	for _, o := range p.cfg.StateOffsets[app.ID] {
		app.Checkpoints = append(app.Checkpoints, p.partition(app.ID, kadm.OffsetResponse{Offset: kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset + 1}},
			kadm.FetchOffsetsResponse{}, st))
	}
}

// judgeApp checks app, whose group g and changelog partitions are judged: the internal topics
// on the target under their own names, every topic of the application with the same
// partitions on both sides, the changelogs copied to their ends, no instance running on the
// source, E(G) known everywhere. It sets Problems, Ready and LocalState.
func (p *planner) judgeApp(ctx context.Context, g *Group, app *App, st *planState) error {
	all := slices.Concat(app.Inputs, app.Repartition, app.Changelogs)
	for _, t := range all {
		_, internal := internalOf(app.ID, t)
		tt := p.cfg.Flow.TargetTopic(t)
		if internal && tt != t {
			app.Problems = append(app.Problems, fmt.Sprintf("internal topic %s is named %s on the target by the flow's replication policy, and Kafka Streams finds its internal topics by their own names only: mirror the application's topics with replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy", t, tt))
			continue
		}
		sd, sok, err := p.src.topic(ctx, t)
		if err != nil {
			return err
		}
		td, tok, err := p.dst.topic(ctx, tt)
		if err != nil {
			return err
		}
		switch {
		case !sok:
			app.Problems = append(app.Problems, fmt.Sprintf("topic %s of the application does not exist on the source", t))
		case !tok:
			app.Problems = append(app.Problems, fmt.Sprintf("topic %s of the application does not exist on the target as %s: mirror it (an internal topic too: the application must find its repartition records and state there)", t, tt))
		case len(sd.Partitions) != len(td.Partitions):
			app.Problems = append(app.Problems, fmt.Sprintf("topic %s has %d partitions on the source and %d on the target as %s: Kafka Streams needs the same counts (co-partitioned inputs, one task per partition); give the target topic %d partitions before the switch",
				t, len(sd.Partitions), len(td.Partitions), tt, len(sd.Partitions)))
		}
	}
	if topicsRe := anchored(p.cfg.Topics); topicsRe != nil {
		for _, t := range all {
			if !topicsRe.MatchString(t) {
				app.Problems = append(app.Problems, fmt.Sprintf("--topics leaves out %s: an application is planned whole", t))
			}
		}
	}
	if s := g.SourceState; s != "Empty" && s != "Dead" && s != "" {
		app.Problems = append(app.Problems, fmt.Sprintf("the application runs on the source (group %s is %s): stop every instance first, so that its commits and changelogs stop moving", g.Group, s))
	}
	for _, part := range g.Partitions {
		if part.ExactTarget == nil {
			app.Problems = append(app.Problems, fmt.Sprintf("%s/%d: E(G) not known (%s)", part.Topic, part.Partition, part.Status))
		}
	}
	for _, part := range app.State {
		if part.ExactTarget == nil {
			app.Problems = append(app.Problems, fmt.Sprintf("changelog %s/%d is not copied to its end %d on the target (%s): wait for the mirror, then plan again", part.Topic, part.Partition, part.SourceCommitted, part.Status))
		}
	}
	app.Ready = len(app.Problems) == 0
	app.LocalState = localState(app)
	return nil
}

// localState says what a state directory kept from the source does on the target. Its
// .checkpoint files hold, per changelog partition, an offset on the source's changelog, which
// names another record on the target (a copy's offsets are not the source's). Where the
// target's offsets run ahead of the source's (markers, replays), the store restores part of
// its changelog again and ends with the same values; where they run behind (a target whose
// copy started later or was cleaned), the checkpoint lies past what the target holds for it.
// Rewriting the checkpoints (kreconcile state) or wiping the directory is right in both cases.
func localState(app *App) []string {
	if len(app.Changelogs) == 0 {
		return []string{"no changelog topic: the application keeps no state in stores, nothing to do with state directories"}
	}
	out := []string{fmt.Sprintf("a state directory kept from the source (state.dir/%s) names source changelog offsets, which name other records on the target: before the first start on the target, on every instance, rewrite them to target offsets (kreconcile state --group %s --state-dir <state.dir> --apply: the stores keep their state; Kafka Streams before 4.3, which keeps them in .checkpoint files) or wipe it (or give a new state.dir), so that each store restores from the target's changelog; Kafka Streams 4.3 and later keep them inside each store (KIP-1035), where nothing can rewrite them: wipe, or keep only where no changelog ends lower on the target", app.ID, app.ID)}
	var ahead, behind int
	for _, part := range app.State {
		switch {
		case part.ExactTarget == nil:
		case *part.ExactTarget > part.SourceCommitted:
			ahead++
		case *part.ExactTarget < part.SourceCommitted:
			behind++
		}
	}
	if ahead > 0 {
		out = append(out, fmt.Sprintf("%d of %d changelog partitions end at a higher offset on the target: a store kept there resumes at or before the copies of its records and ends with the same values", ahead, len(app.State)))
	}
	if behind > 0 {
		out = append(out, fmt.Sprintf("%d of %d changelog partitions end at a lower offset on the target: a store kept there names an offset past what the target holds for it, and after a crash could miss what the application wrote there before its first commit on the target: do not keep those directories unless rewritten", behind, len(app.State)))
	}
	return out
}
