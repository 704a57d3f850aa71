package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/logread"
	"github.com/kmigrate/kmigrate/mm2"
)

// Heartbeats (Config.EmitHeartbeats): what MM2's heartbeat connector of the flow
// source->target does, kmirror does beside the mirror. Every EmitHeartbeatsInterval it writes
// one mm2.Heartbeat (key: source and target alias; value: version 0 and the time in ms) to
// partition 0 of HeartbeatsTopic on the TARGET, and it creates that topic when it is missing,
// as MM2 does: compacted, one partition, HeartbeatsReplicationFactor. Nothing goes to the
// source.
//
// Heartbeats never get in the mirror's way: they have a producer of their own (plain, acks=all,
// not idempotent so that old brokers ask for no IdempotentWrite on the cluster; never one of
// the transactional producers), a failed heartbeat or topic creation is counted, logged with
// the cluster and the topic (the first of a run of failures, a new error, then once a minute)
// and tried again at the next interval, and nothing of it stops the engine. At start the
// principal's Create and Write on the topic are checked with the requests of the access check
// (access.go); a denial is a warning and the engine emits no heartbeats, rather than stopping
// a mirror that ran without them before.

// heartbeatLogEvery is how often a failure that goes on is logged again.
const heartbeatLogEvery = time.Minute

// heartbeater emits the flow's heartbeats; run is its loop.
type heartbeater struct {
	source, target string // the flow's aliases
	topic          string
	interval       time.Duration
	rf             int16
	opts           []kgo.Opt // the target's connection options and the producer's
	log            *slog.Logger
	m              *metrics

	adm      *kadm.Client
	cl       *kgo.Client
	ready    bool // the topic exists
	checked  bool // an existing topic's partitions and cleanup.policy were looked at
	failures int  // failures in a row
	lastErr  string
	lastLog  time.Time
}

// setupHeartbeats decides at start, after the access check, whether this engine emits
// heartbeats, and says so in the log: to which cluster and topic and how often, or why not.
func (e *Engine) setupHeartbeats(ctx context.Context) {
	c := e.cfg
	switch {
	case !c.EmitHeartbeats:
		e.log.Info("heartbeats not emitted", "reason", "emit.heartbeats.enabled=false")
		return
	case c.EmitHeartbeatsInterval <= 0:
		e.log.Info("heartbeats not emitted", "reason", "emit.heartbeats.interval.seconds is negative")
		return
	}
	needs := []need{{topic: c.HeartbeatsTopic, ops: []kadm.ACLOperation{kadm.OpWrite}, create: true}}
	if _, err := e.access.checkTopics(ctx, "target", c.TargetAlias, e.dst, needs); err != nil {
		if logread.Denied(err) {
			e.log.Warn("heartbeats not emitted: the principal may not create or write the heartbeats topic; grant Create and Write on it and restart, or set emit.heartbeats.enabled=false",
				"cluster", c.TargetAlias, "topic", c.HeartbeatsTopic, "err", err)
			return
		}
		e.log.Warn("heartbeats: could not check the principal's operations on the heartbeats topic; emitting anyway", "cluster", c.TargetAlias, "topic", c.HeartbeatsTopic, "err", err)
	}
	timeout := max(c.EmitHeartbeatsInterval, 10*time.Second)
	e.hb = &heartbeater{
		source: c.SourceAlias, target: c.TargetAlias, topic: c.HeartbeatsTopic,
		interval: c.EmitHeartbeatsInterval, rf: c.HeartbeatsReplicationFactor, log: e.log, m: e.metrics,
		opts: append(append([]kgo.Opt(nil), e.dstOpts...),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DisableIdempotentWrite(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(timeout),
			kgo.MetadataMinAge(500*time.Millisecond),
			e.metrics.clientHooks(roleTarget, false),
		),
	}
	e.log.Info("heartbeats emitted", "cluster", c.TargetAlias, "topic", c.HeartbeatsTopic,
		"interval", c.EmitHeartbeatsInterval, "replication_factor", c.HeartbeatsReplicationFactor)
}

// run emits a heartbeat every interval until ctx ends. The topic is made ready at once (MM2's
// connector creates it when it starts); as in MM2's task, each heartbeat follows a full
// interval after the previous one ended, so a slow target delays them but never bunches them.
func (h *heartbeater) run(ctx context.Context) {
	cl, err := kgo.NewClient(h.opts...)
	if err != nil {
		h.log.Warn("heartbeats not emitted: create the producer", "cluster", h.target, "topic", h.topic, "err", err)
		return
	}
	defer cl.Close()
	h.cl, h.adm = cl, kadm.NewClient(cl)
	if err := h.ensureTopic(ctx); err != nil && ctx.Err() == nil {
		h.failed(err)
	}
	wait := time.NewTimer(h.interval)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		if err := h.beat(ctx); err != nil && ctx.Err() == nil {
			h.failed(err)
		}
		wait.Reset(h.interval)
	}
}

// beat writes one heartbeat, after making the topic ready if it is not yet.
func (h *heartbeater) beat(ctx context.Context) error {
	if err := h.ensureTopic(ctx); err != nil {
		return err
	}
	now := time.Now()
	hb := mm2.Heartbeat{SourceAlias: h.source, TargetAlias: h.target, Timestamp: now.UnixMilli()}
	pctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	r := &kgo.Record{Topic: h.topic, Partition: 0, Key: hb.Key(), Value: hb.Value(), Timestamp: hb.Time()}
	if err := h.cl.ProduceSync(pctx, r).FirstErr(); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			h.ready, h.checked = false, false // deleted meanwhile: create it again
		}
		return fmt.Errorf("produce: %w", err)
	}
	h.m.heartbeats.Inc()
	if h.failures > 0 {
		h.log.Info("heartbeats emitted again", "cluster", h.target, "topic", h.topic, "failures", h.failures)
	}
	h.failures, h.lastErr = 0, ""
	return nil
}

func (h *heartbeater) timeout() time.Duration { return max(h.interval, 10*time.Second) }

// ensureTopic makes sure the heartbeats topic exists: it creates a missing one (compacted, one
// partition) and warns once about an existing one that is not compacted or has more than one
// partition, which it leaves as it is.
func (h *heartbeater) ensureTopic(ctx context.Context) error {
	if h.ready {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	tds, err := h.adm.ListTopics(ctx, h.topic)
	if err != nil {
		return fmt.Errorf("describe the topic: %w", err)
	}
	if td, ok := tds[h.topic]; ok && td.Err == nil {
		h.ready = true
		h.check(ctx, td)
		return nil
	} else if ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("describe the topic: %w", td.Err)
	}
	compact := "compact"
	_, err = h.adm.CreateTopic(ctx, 1, h.rf, map[string]*string{"cleanup.policy": &compact}, h.topic)
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil // created meanwhile: the next beat finds and checks it
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return fmt.Errorf("create the topic (compacted, 1 partition, replication factor %d): %w (the cluster has fewer brokers: set heartbeats.topic.replication.factor)", h.rf, err)
	case err != nil:
		return fmt.Errorf("create the topic (compacted, 1 partition, replication factor %d): %w", h.rf, err)
	}
	h.ready, h.checked = true, true
	h.log.Info("created the heartbeats topic", "cluster", h.target, "topic", h.topic, "replication_factor", h.rf)
	return nil
}

// check warns, once, about an existing topic that is not what MM2 creates.
func (h *heartbeater) check(ctx context.Context, td kadm.TopicDetail) {
	if h.checked {
		return
	}
	h.checked = true
	if n := len(td.Partitions); n != 1 {
		h.log.Warn("the heartbeats topic has more than one partition; kmirror writes to partition 0, as MM2 does, and leaves the topic as it is",
			"cluster", h.target, "topic", h.topic, "partitions", n)
	}
	rcs, err := h.adm.DescribeTopicConfigs(ctx, h.topic)
	if err == nil {
		var rc kadm.ResourceConfig
		if rc, err = rcs.On(h.topic, nil); err == nil {
			err = rc.Err
		}
		if err == nil {
			for _, c := range rc.Configs {
				if c.Key == "cleanup.policy" && !strings.Contains(c.MaybeValue(), "compact") {
					h.log.Warn("the heartbeats topic is not compacted; MM2 creates it with cleanup.policy=compact; kmirror leaves it as it is",
						"cluster", h.target, "topic", h.topic, "cleanup.policy", c.MaybeValue())
				}
			}
			return
		}
	}
	h.log.Info("the heartbeats topic's cleanup.policy was not checked (needs DescribeConfigs on it)", "cluster", h.target, "topic", h.topic, "err", err)
}

// failed counts a failed heartbeat and logs it: the first of a run of failures, a new error,
// and then once every heartbeatLogEvery.
func (h *heartbeater) failed(err error) {
	h.m.heartbeatErrors.Inc()
	h.failures++
	now := time.Now()
	if h.failures == 1 || err.Error() != h.lastErr || now.Sub(h.lastLog) >= heartbeatLogEvery {
		h.log.Warn("heartbeat not emitted; trying again at the next interval", "cluster", h.target, "topic", h.topic,
			"failures", h.failures, "err", err)
		h.lastErr, h.lastLog = err.Error(), now
	}
}
