package mirror

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// The access check (preflight) runs before kmirror writes anything: before it creates a topic,
// joins its group, initialises a transactional id or produces a record. It asks each cluster
// what the principal may do, without changing anything:
//
//   - topics that exist: Metadata with their authorized operations (KIP-430, Kafka 2.3+);
//   - groups: DescribeGroups with their authorized operations (a group that does not exist is
//     described too, as Dead, with the operations);
//   - target topics that do not exist yet: CreateTopics with validate_only (Create), a Produce
//     request without a record batch (Write), a Fetch of one byte (Read), DescribeConfigs and
//     IncrementalAlterConfigs with validate_only (DescribeConfigs, AlterConfigs): the broker
//     checks the operation before it looks for the topic;
//   - the transactional ids of the fence: DescribeTransactions (Describe, implied by Write;
//     Kafka 3.0+ targets).
//
// A denied operation is an error naming the cluster, the operation and the resource, wrapping
// the broker's authorization error (the command adds the principal). A probe whose answer says
// nothing (a broker too old to report operations, or one that validates the request before it
// authorizes it) checks nothing; accessCheck.checkCreated asks again about the topics kmirror created, right
// after creating them and before the first record, so that a refusal then leaves only empty
// topics; and the operation itself still fails with the same kind of error.

// accessCheck is the preflight of one engine: the clients it asks, the configuration it
// reads, and what it finds that a later step needs (created: the target topics that did not
// exist, which checkCreated asks about again once prepareTarget made them). connect builds it
// once the clients exist; nothing in it changes the clusters.
type accessCheck struct {
	cfg     *Config
	srcCl   *kgo.Client // the source admin's client: metadata of the source topics
	srcAdm  *kadm.Client
	dst     *kgo.Client // the target producer's client: metadata and produce probes
	dstAdm  *kadm.Client
	dstOpts []kgo.Opt // the target's connection options (the Fetch v12 probe's own client)
	// created are the target topics missing at the check, which prepareTarget creates.
	created []string
}

// need is one resource of the check and the operations kmirror needs on it.
type need struct {
	topic string
	ops   []kadm.ACLOperation
	// create: kmirror creates the topic when it is missing.
	create bool
}

// opName is an operation as kafka-acls spells it (Read, DescribeConfigs, ...).
func opName(op kadm.ACLOperation) string {
	var b strings.Builder
	for w := range strings.SplitSeq(strings.ToLower(op.String()), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// deniedErr is the error of a denied operation: what, on which resource, on which cluster, and
// what to grant; it wraps the broker's authorization error kind.
func deniedErr(side, alias string, kind error, op kadm.ACLOperation, rtype, name, what string) error {
	return fmt.Errorf("%s cluster %s denies %s on %s:%s, which kmirror needs to %s: %w; grant it (kafka-acls --add --operation %s --%s %s) and start kmirror again; nothing was written",
		side, alias, opName(op), rtype, name, what, kind, opName(op), strings.ToLower(rtype), name)
}

// check is the preflight of Run for the flow's source topics (name to partitions).
func (a *accessCheck) check(ctx context.Context, topics map[string]int, gs *groupSyncer) error {
	if err := a.checkLiteralTopics(topics); err != nil {
		return err
	}
	srcOps := []kadm.ACLOperation{kadm.OpRead}
	if a.cfg.SyncTopicConfigs {
		srcOps = append(srcOps, kadm.OpDescribeConfigs)
	}
	var src []need
	for t := range topics {
		src = append(src, need{topic: t, ops: srcOps})
	}
	if _, err := a.checkTopics(ctx, "source", a.cfg.SourceAlias, a.srcCl, src); err != nil {
		return err
	}
	if err := a.checkGroups(ctx, "source", a.cfg.SourceAlias, a.srcAdm, []string{a.cfg.GroupID}, "join the group that shares the partitions"); err != nil {
		return err
	}
	missing, err := a.checkTopics(ctx, "target", a.cfg.TargetAlias, a.dst, a.targetNeeds(topics))
	if err != nil {
		return err
	}
	a.created = missing
	if err := a.checkCreateConfigs(ctx, topics, missing); err != nil {
		return err
	}
	if err := a.checkTransactions(ctx, topics); err != nil {
		return err
	}
	if gs != nil && a.cfg.SyncGroupOffsets {
		groups, err := gs.s.Selected(ctx)
		if err != nil {
			return fmt.Errorf("source cluster %s: list the groups to sync: %w%s", a.cfg.SourceAlias, err, hint(err))
		}
		if err := a.checkGroups(ctx, "target", a.cfg.TargetAlias, a.dstAdm, groups, "commit the group's translated offsets"); err != nil {
			return err
		}
	}
	return nil
}

// checkCreateConfigs checks, when the periodic config sync is off (with it on check asks
// already), that the source lets kmirror read the configuration overrides of the source
// topics whose targets are missing: a target topic is created with its source's overrides
// whatever sync.topic.configs.enabled says (createTarget).
func (a *accessCheck) checkCreateConfigs(ctx context.Context, topics map[string]int, missingTargets []string) error {
	if a.cfg.SyncTopicConfigs || len(missingTargets) == 0 {
		return nil
	}
	var src []need
	for t := range topics {
		if slices.Contains(missingTargets, a.cfg.targetTopic(t)) {
			src = append(src, need{topic: t, ops: []kadm.ACLOperation{kadm.OpDescribeConfigs}})
		}
	}
	_, err := a.checkTopics(ctx, "source", a.cfg.SourceAlias, a.srcCl, src)
	return err
}

// targetNeeds are the target topics of the flow and the operations on each.
func (a *accessCheck) targetNeeds(topics map[string]int) []need {
	mirrored := []kadm.ACLOperation{kadm.OpWrite, kadm.OpRead, kadm.OpDescribeConfigs}
	if a.cfg.SyncTopicConfigs {
		mirrored = append(mirrored, kadm.OpAlterConfigs)
	}
	var out []need
	for t := range topics {
		out = append(out, need{topic: a.cfg.targetTopic(t), ops: mirrored, create: true})
	}
	out = append(out, need{topic: a.cfg.MapTopic, ops: []kadm.ACLOperation{kadm.OpWrite, kadm.OpRead}, create: true})
	if a.cfg.OffsetSyncsOnTarget {
		out = append(out, need{topic: a.cfg.OffsetSyncsTopic, ops: []kadm.ACLOperation{kadm.OpWrite}, create: true})
	}
	if a.cfg.EmitCheckpoints && a.cfg.CheckpointsTopic != "" {
		out = append(out, need{topic: a.cfg.CheckpointsTopic, ops: []kadm.ACLOperation{kadm.OpWrite, kadm.OpRead}, create: true})
	}
	return out
}

// literalName is a `topics` entry that names one topic: only the characters of a topic name,
// the dot included (as a pattern it matches itself, and other names only where a dot stands).
var literalName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// checkLiteralTopics refuses a flow whose `topics` names a topic the source does not show:
// either it does not exist or the principal may not Describe it (Kafka hides it then), and
// kmirror cannot tell which. A pattern that matches nothing is no error: topics may appear.
func (a *accessCheck) checkLiteralTopics(topics map[string]int) error {
	var absent []string
	for _, p := range a.cfg.Topics {
		if !literalName.MatchString(p) || strings.Trim(p, ".") == "" {
			continue
		}
		if _, ok := topics[p]; !ok && a.cfg.matches(p) {
			absent = append(absent, p)
		}
	}
	if len(absent) == 0 {
		return nil
	}
	sort.Strings(absent)
	return fmt.Errorf("source cluster %s does not show topic %s, which the flow's topics names: it does not exist, or the principal may not Describe it "+
		"(Kafka hides such a topic; kmirror needs Read on it, which implies Describe); create it or grant Read, then start kmirror again; nothing was written",
		a.cfg.SourceAlias, strings.Join(absent, ", "))
}

// checkTopics checks the operations of needs on cluster cl and returns the topics that do
// not exist (those kmirror will create: Create and Write checked already).
func (a *accessCheck) checkTopics(ctx context.Context, side, alias string, cl *kgo.Client, needs []need) ([]string, error) {
	if len(needs) == 0 {
		return nil, nil
	}
	sort.Slice(needs, func(i, j int) bool { return needs[i].topic < needs[j].topic })
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	req.AllowAutoTopicCreation = false // a check never creates a topic
	for _, n := range needs {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n.topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("%s cluster %s: check the principal's operations on %d topics (metadata): %w%s", side, alias, len(needs), err, hint(err))
	}
	byName := map[string]kmsg.MetadataResponseTopic{}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			byName[*t.Topic] = t
		}
	}
	var missing []need
	for _, n := range needs {
		t, ok := byName[n.topic]
		if !ok {
			continue // not answered: nothing to judge
		}
		ke := kerr.ErrorForCode(t.ErrorCode)
		switch {
		case ke == nil:
			if err := a.checkOps(side, alias, n, t.AuthorizedOperations); err != nil {
				return nil, err
			}
		case errors.Is(ke, kerr.UnknownTopicOrPartition) && n.create:
			missing = append(missing, n)
		case errors.Is(ke, kerr.TopicAuthorizationFailed):
			return nil, deniedErr(side, alias, ke, n.ops[0], "Topic", n.topic, "see the topic (Describe, implied by "+opList(n.ops)+")")
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	names := make([]string, len(missing))
	for i, n := range missing {
		names[i] = n.topic
	}
	if err := a.checkCreate(ctx, side, alias, names); err != nil {
		return nil, err
	}
	probes := []struct {
		op    kadm.ACLOperation
		probe func(context.Context, string, string, []string) error
	}{
		{kadm.OpWrite, func(ctx context.Context, side, alias string, names []string) error {
			return a.checkWrite(ctx, side, alias, cl, names)
		}},
		{kadm.OpRead, a.checkRead},
		{kadm.OpDescribeConfigs, a.checkDescribeConfigs},
		{kadm.OpAlterConfigs, a.checkAlterConfigs},
	}
	for _, p := range probes {
		var these []string
		for _, n := range missing {
			if slices.Contains(n.ops, p.op) {
				these = append(these, n.topic)
			}
		}
		if len(these) == 0 {
			continue
		}
		if err := p.probe(ctx, side, alias, these); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// The probes below ask the target about topics that do not exist. Kafka checks the
// principal's operation before it looks for the topic, so TOPIC_AUTHORIZATION_FAILED means
// denied and UNKNOWN_TOPIC_OR_PARTITION allowed; a request that gets no answer, or an answer
// of another kind, says nothing, and the operation is checked again once the topic exists
// (checkCreated). None of them changes anything.

// topicDenied returns the denial of op on the first topic of names whose error is a topic
// authorization failure.
func topicDenied(side, alias string, op kadm.ACLOperation, errs map[string]error) error {
	names := make([]string, 0, len(errs))
	for name := range errs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if errors.Is(errs[name], kerr.TopicAuthorizationFailed) {
			return deniedErr(side, alias, errs[name], op, "Topic", name, topicUse(side, op))
		}
	}
	return nil
}

// checkRead fetches partition 0 of each of names from offset 0 with Fetch v12, which names
// topics (v13 and later send topic IDs, which a missing topic does not have).
func (a *accessCheck) checkRead(ctx context.Context, side, alias string, names []string) error {
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), a.dstOpts...), kgo.MaxVersions(kversion.V3_0_0()))...)
	if err != nil {
		return nil
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1
	req.SessionEpoch = -1
	for _, name := range names {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = name
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil
	}
	errs := map[string]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if ke := kerr.ErrorForCode(p.ErrorCode); ke != nil {
				errs[t.Topic] = ke
			}
		}
	}
	return topicDenied(side, alias, kadm.OpRead, errs)
}

// checkDescribeConfigs describes the configuration of names.
func (a *accessCheck) checkDescribeConfigs(ctx context.Context, side, alias string, names []string) error {
	rcs, err := a.dstAdm.DescribeTopicConfigs(ctx, names...)
	if err != nil && len(rcs) == 0 {
		return nil
	}
	errs := map[string]error{}
	for _, rc := range rcs {
		errs[rc.Name] = rc.Err
	}
	return topicDenied(side, alias, kadm.OpDescribeConfigs, errs)
}

// checkAlterConfigs validates (validate_only) setting a topic configuration on names.
func (a *accessCheck) checkAlterConfigs(ctx context.Context, side, alias string, names []string) error {
	resp, err := a.dstAdm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")}}, names...)
	if err != nil && len(resp) == 0 {
		return nil
	}
	errs := map[string]error{}
	for _, r := range resp {
		errs[r.Name] = r.Err
	}
	return topicDenied(side, alias, kadm.OpAlterConfigs, errs)
}

func opList(ops []kadm.ACLOperation) string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = opName(op)
	}
	return strings.Join(names, ", ")
}

// checkOps checks the authorized operations (a bit field) of an existing topic.
func (a *accessCheck) checkOps(side, alias string, n need, bits int32) error {
	if bits == math.MinInt32 {
		return nil // the broker did not say
	}
	have := kadm.DecodeACLOperations(bits)
	for _, op := range n.ops {
		if !slices.Contains(have, op) {
			return deniedErr(side, alias, kerr.TopicAuthorizationFailed, op, "Topic", n.topic, topicUse(side, op))
		}
	}
	return nil
}

// topicUse says what an operation on a topic is for.
func topicUse(side string, op kadm.ACLOperation) string {
	switch {
	case side == "source" && op == kadm.OpRead:
		return "fetch its records"
	case side == "source":
		return "read its configuration overrides, which a target topic is created with and sync.topic.configs.enabled keeps in step"
	case op == kadm.OpWrite:
		return "produce into it"
	case op == kadm.OpRead:
		return "read what it holds when it resumes"
	case op == kadm.OpDescribeConfigs:
		return "read its max.message.bytes"
	case op == kadm.OpAlterConfigs:
		return "copy the source topic's configuration (sync.topic.configs.enabled)"
	case op == kadm.OpCreate:
		return "create it"
	}
	return "mirror"
}

// checkCreate asks the target to validate the creation of names without creating them.
func (a *accessCheck) checkCreate(ctx context.Context, side, alias string, names []string) error {
	resp, err := a.dstAdm.ValidateCreateTopics(ctx, 1, -1, nil, names...)
	if err != nil {
		return fmt.Errorf("%s cluster %s: validate the creation of %s: %w%s", side, alias, strings.Join(names, ", "), err, hint(err))
	}
	for _, name := range names {
		r, ok := resp[name]
		if ok && (errors.Is(r.Err, kerr.TopicAuthorizationFailed) || errors.Is(r.Err, kerr.ClusterAuthorizationFailed)) {
			return deniedErr(side, alias, r.Err, kadm.OpCreate, "Topic", name, "create it (it does not exist yet)")
		}
	}
	return nil
}

// checkWrite sends a Produce request without a record batch for each of names, which do not
// exist: the broker answers TOPIC_AUTHORIZATION_FAILED when the principal may not Write, else
// UNKNOWN_TOPIC_OR_PARTITION; had the topic appeared meanwhile, the empty request is refused
// as invalid. Nothing is written in any case.
func (a *accessCheck) checkWrite(ctx context.Context, side, alias string, cl *kgo.Client, names []string) error {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	for _, name := range names {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = []byte{}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil // no answer says nothing; the first produce checks it
	}
	errs := map[string]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if ke := kerr.ErrorForCode(p.ErrorCode); ke != nil {
				errs[t.Topic] = ke
			}
		}
	}
	return topicDenied(side, alias, kadm.OpWrite, errs)
}

// checkCreated checks the operations on the target topics kmirror has just created, which
// Kafka could not report before they existed, before the first record goes to any of them.
func (a *accessCheck) checkCreated(ctx context.Context, topics map[string]int) error {
	if len(a.created) == 0 {
		return nil
	}
	var needs []need
	for _, n := range a.targetNeeds(topics) {
		if slices.Contains(a.created, n.topic) && n.topic != a.cfg.CheckpointsTopic {
			n.create = false
			needs = append(needs, n)
		}
	}
	_, err := a.checkTopics(ctx, "target", a.cfg.TargetAlias, a.dst, needs)
	if err != nil {
		return fmt.Errorf("%w (kmirror created the topics %s a moment ago, when Kafka could not yet report these operations: they hold no record)",
			err, strings.Join(a.created, ", "))
	}
	return nil
}

// checkGroups checks that the principal may Read each of groups on the cluster of adm.
func (a *accessCheck) checkGroups(ctx context.Context, side, alias string, adm *kadm.Client, groups []string, what string) error {
	if len(groups) == 0 {
		return nil
	}
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil && !errors.Is(err, kerr.GroupAuthorizationFailed) {
		// No answer (a coordinator not available yet on a fresh cluster) says nothing: the
		// group join or the commit checks the operation itself.
		return nil
	}
	for _, g := range groups {
		d, ok := described[g]
		switch {
		case !ok && err != nil:
			return deniedErr(side, alias, kerr.GroupAuthorizationFailed, kadm.OpRead, "Group", g, what)
		case !ok:
			continue
		case errors.Is(d.Err, kerr.GroupAuthorizationFailed):
			return deniedErr(side, alias, d.Err, kadm.OpRead, "Group", g, what)
		case d.Err == nil && len(d.AuthorizedOperations) > 0 && !slices.Contains(d.AuthorizedOperations, kadm.OpRead):
			return deniedErr(side, alias, kerr.GroupAuthorizationFailed, kadm.OpRead, "Group", g, what)
		}
	}
	return nil
}

// checkTransactions checks that the principal may use the fence's transactional ids: one of
// them is described (Describe, implied by Write). A target that cannot describe transactions
// (before Kafka 3.0) is not asked; the fence's InitProducerId then checks.
func (a *accessCheck) checkTransactions(ctx context.Context, topics map[string]int) error {
	if a.cfg.Fencing != FenceTransactions || len(topics) == 0 {
		return nil
	}
	id := newBucketScheme(a.cfg).txnID(0)
	described, err := a.dstAdm.DescribeTransactions(ctx, id)
	if err == nil {
		if d, ok := described[id]; ok {
			err = d.Err
		}
	}
	if errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		return deniedErr("target", a.cfg.TargetAlias, err, kadm.OpWrite, "TransactionalId", a.cfg.GroupID+"-",
			fmt.Sprintf("fence each bucket's writes (transactional id %s and the others of the prefix; exactly.once.source.support=disabled runs without)", id))
	}
	return nil
}
