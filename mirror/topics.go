package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/agree"
	"github.com/kmigrate/kmigrate/logread"
)

// sourceTopics lists the source topics the flow mirrors, with their partition counts.
func (e *Engine) sourceTopics(ctx context.Context) (map[string]int, error) {
	td, err := e.srcAdm.ListTopics(ctx)
	if err != nil {
		return nil, e.clusterErr("source", e.cfg.SourceAlias, "list topics", err)
	}
	out := map[string]int{}
	for name, d := range td {
		if d.Err != nil || d.IsInternal || !e.cfg.matches(name) {
			continue
		}
		out[name] = len(d.Partitions)
	}
	return out, nil
}

// ensureTargets makes sure every target topic exists with at least the source's partition
// count: missing topics are created with the source's synced configuration, short ones grow.
func (e *Engine) ensureTargets(ctx context.Context, src map[string]int) error {
	if len(src) == 0 {
		return nil
	}
	names := make([]string, 0, len(src))
	byTarget := map[string]string{}
	for s := range src {
		t := e.cfg.targetTopic(s)
		names = append(names, t)
		byTarget[t] = s
	}
	sort.Strings(names)
	td, err := e.dstAdm.ListTopics(ctx, names...)
	if err != nil {
		return e.clusterErr("target", e.cfg.TargetAlias, "describe target topics", err)
	}
	var errs []error
	for _, t := range names {
		s := byTarget[t]
		want := src[s]
		d, ok := td[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			if err := e.createTarget(ctx, s, t, want); err != nil {
				errs = append(errs, err)
			}
		case d.Err != nil:
			errs = append(errs, fmt.Errorf("target cluster %s: describe topic %s: %w%s", e.cfg.TargetAlias, t, d.Err, hint(d.Err)))
		case len(d.Partitions) < want && e.grownAlready(ctx, t, want):
			// One broker's metadata was behind a growth already made (by another kmirror
			// process, or an operator): every broker now lists at least want partitions.
		case len(d.Partitions) < want:
			e.log.Warn("target topic has fewer partitions than the source: adding partitions",
				"cluster", e.cfg.TargetAlias, "topic", t, "partitions", len(d.Partitions), "source_partitions", want)
			resp, err := e.dstAdm.UpdatePartitions(ctx, want, t)
			if err == nil {
				_, err = resp.On(t, nil)
				if r, ok := resp[t]; ok && r.Err != nil {
					err = r.Err
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("target topic %s has %d partitions, source topic %s has %d, and adding partitions failed: %w%s; add them with kafka-topics --alter --partitions %d, or delete the target topic so kmirror creates it",
					t, len(d.Partitions), s, want, err, hint(err), want))
			}
		}
	}
	return errors.Join(errs...)
}

// partitionsReadTimeout bounds the wait for the target's brokers to agree on a topic's
// partitions before kmirror adds partitions to it.
const partitionsReadTimeout = 5 * time.Second

// grownAlready asks every broker of the target for topic t's partitions and reports whether
// they all list at least want. The first answer came from one broker, whose metadata can be
// behind a CreatePartitions another process made: adding partitions then fails with
// INVALID_PARTITIONS, which would stop kmirror at start. Brokers that do not agree within the
// bound (or a failed read) count as not grown: kmirror adds partitions, as it would have.
func (e *Engine) grownAlready(ctx context.Context, t string, want int) bool {
	ans, err := agree.Sets(ctx, e.dst, agree.Config{Timeout: partitionsReadTimeout}, agree.Partitions(t, false), nil)
	if err != nil {
		return false
	}
	s, ok := ans.Agreed()
	return ok && len(s) >= want
}

// createTarget creates target topic t for source topic s with s's configuration overrides
// (sourceConfigs: dynamic topic configs, neither sensitive nor excluded by ConfigExclude).
func (e *Engine) createTarget(ctx context.Context, s, t string, partitions int) error {
	// The source's overrides, whatever sync.topic.configs.enabled says (as MirrorMaker 2
	// creates topics): a compacted source must not become a target that deletes by retention
	// the keys the source keeps.
	configs, err := e.sourceConfigs(ctx, s)
	if err != nil {
		return err
	}
	_, err = e.dstAdm.CreateTopic(ctx, int32(partitions), e.cfg.ReplicationFactor, configs, t)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("target cluster %s: create topic %s (%d partitions, replication factor %d): %w%s",
			e.cfg.TargetAlias, t, partitions, e.cfg.ReplicationFactor, err, hint(err))
	}
	e.log.Info("created target topic", "cluster", e.cfg.TargetAlias, "topic", t, "partitions", partitions,
		"replication_factor", e.cfg.ReplicationFactor, "configs", len(configs))
	// The resume lists the new partitions' ends at once: wait until they have leaders, or it
	// would find them missing and retry a second later.
	return e.waitLeaders(ctx, t, partitions)
}

// waitLeaders polls (every 10 ms, up to 5 s) until every partition of topic, just created,
// has a leader in the target's metadata and that leader lists its offsets (a broker learns it
// leads a new partition a little before it serves it, and a client that asks then backs off
// for a quarter of a second). It asks the broker each time (a Metadata request,
// not kadm's cached metadata, which would answer from a cache up to MetadataMinAge old), and
// the answer refreshes the client's cache, so the requests after it find the topic. Not
// ready in time is no error: the resume retries.
func (e *Engine) waitLeaders(ctx context.Context, topic string, partitions int) error {
	for i := 0; i < 500; i++ {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		if resp, err := req.RequestWith(ctx, e.dst); err == nil && leadersReady(resp, topic, partitions) && e.offsetsReady(ctx, resp, topic) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// offsetsReady asks the leader of each partition of topic in resp (leadersReady said each has
// one) for its end offset, once, without retries, and tells whether all answered.
func (e *Engine) offsetsReady(ctx context.Context, resp *kmsg.MetadataResponse, topic string) bool {
	var t kmsg.MetadataResponseTopic
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			t = mt
		}
	}
	byLeader := map[int32]*kmsg.ListOffsetsRequest{}
	for _, p := range t.Partitions {
		req := byLeader[p.Leader]
		if req == nil {
			req = kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			req.Topics = append(req.Topics, rt)
			byLeader[p.Leader] = req
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.Partition, -1, -1
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	for leader, req := range byLeader {
		kresp, err := e.dst.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return false
		}
		for _, rt := range kresp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return false
				}
			}
		}
	}
	return true
}

// leadersReady tells whether resp lists topic with at least partitions partitions, each with
// a leader.
func leadersReady(resp *kmsg.MetadataResponse, topic string, partitions int) bool {
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic || t.ErrorCode != 0 || len(t.Partitions) < partitions {
			continue
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
		}
		return true
	}
	return false
}

// sourceConfigs returns the configuration overrides of source topic s that MM2 would copy:
// those set on the topic itself, neither sensitive nor read-only nor excluded by
// config.properties.exclude. Defaults are not copied, so the target's defaults apply.
func (e *Engine) sourceConfigs(ctx context.Context, s string) (map[string]*string, error) {
	rcs, err := e.srcAdm.DescribeTopicConfigs(ctx, s)
	if err != nil {
		return nil, e.clusterErr("source", e.cfg.SourceAlias, "describe configs of topic "+s, err)
	}
	out := map[string]*string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("source cluster %s: describe configs of topic %s: %w%s", e.cfg.SourceAlias, s, rc.Err, hint(rc.Err))
		}
		for _, c := range rc.Configs {
			if c.Source != kmsg.ConfigSourceDynamicTopicConfig || c.Sensitive || c.Value == nil || e.cfg.excludedConfig(c.Key) {
				continue
			}
			out[c.Key] = c.Value
		}
	}
	return out, nil
}

// syncConfigs copies the source topics' overrides onto existing target topics.
func (e *Engine) syncConfigs(ctx context.Context, src map[string]int) {
	for s := range src {
		cfgs, err := e.sourceConfigs(ctx, s)
		if err != nil {
			e.log.Warn("sync topic configs failed", "cluster", e.cfg.SourceAlias, "topic", s, "err", err)
			continue
		}
		if len(cfgs) == 0 {
			continue
		}
		alter := make([]kadm.AlterConfig, 0, len(cfgs))
		for k, v := range cfgs {
			alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
		}
		t := e.cfg.targetTopic(s)
		resp, err := e.dstAdm.AlterTopicConfigs(ctx, alter, t)
		if err == nil {
			for _, r := range resp {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			e.log.Warn("sync topic configs failed", "cluster", e.cfg.TargetAlias, "topic", t, "err", err)
		}
	}
}

// mapTopicConfigs are the offset map topic's configs beside cleanup.policy=compact: its
// active segment rolls every hour and is cleaned once a tenth of it is dirty, and a tombstone
// (of a compacted map segment) is kept an hour after its cleaning, so that a resume reads the
// window of each partition plus at most about two hours of commits, however long the flow ran.
var mapTopicConfigs = map[string]string{
	"segment.ms":                "3600000",
	"min.cleanable.dirty.ratio": "0.1",
	"delete.retention.ms":       "3600000",
}

// ensureInternal creates a single-partition compacted topic on the target when missing (the
// offset map topic with mapTopicConfigs).
func (e *Engine) ensureInternal(ctx context.Context, topic string) error {
	td, err := e.dstAdm.ListTopics(ctx, topic)
	if err != nil {
		return e.clusterErr("target", e.cfg.TargetAlias, "describe topic "+topic, err)
	}
	if d, ok := td[topic]; ok && d.Err == nil {
		return nil
	}
	compact := "compact"
	configs := map[string]*string{"cleanup.policy": &compact}
	if topic == e.cfg.MapTopic {
		for k, v := range mapTopicConfigs {
			configs[k] = &v
		}
	}
	_, err = e.dstAdm.CreateTopic(ctx, 1, e.cfg.InternalReplicationFactor, configs, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("target cluster %s: create internal topic %s (replication factor %d): %w%s",
			e.cfg.TargetAlias, topic, e.cfg.InternalReplicationFactor, err, hint(err))
	}
	e.log.Info("created internal topic", "cluster", e.cfg.TargetAlias, "topic", topic)
	// Wait until the new partition has a leader, so the first read of the topic finds it.
	return e.waitLeaders(ctx, topic, 1)
}

// clusterErr turns a request error into one that names the cluster and says what to do.
func (e *Engine) clusterErr(side, alias, what string, err error) error {
	return fmt.Errorf("%s cluster %s: %s: %w%s", side, alias, what, err, hint(err))
}

// hint says what to do about the common errors.
func hint(err error) string {
	switch {
	case logread.Denied(err):
		return " (missing permission: grant the kmirror principal the ACLs of the \"Least privilege\" table in docs/security.md: Read on the source topics and its group, Create/Write/Read/AlterConfigs on the target topics and its map topic, Write on its transactional ids)"
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return " (the cluster has fewer brokers than the replication factor: set replication.factor / offset-syncs.topic.replication.factor)"
	case errors.Is(err, context.DeadlineExceeded):
		return " (no answer in time: check bootstrap.servers, the network and the security settings)"
	}
	return ""
}

// isFatal reports whether a fetch error stops the engine: a permission or authentication
// failure, which no retry cures.
func isFatal(err error) bool {
	return logread.Denied(err) || errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState)
}

// logTopics logs the mirrored topics at start.
func logTopics(log *slog.Logger, src map[string]int) {
	for t, n := range src {
		log.Info("mirroring topic", "topic", t, "partitions", n)
	}
}
