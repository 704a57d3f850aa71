package aclsync

// Plan reads every ACL of both clusters and says, for each source ACL, what it becomes on the
// target (principal mapped by the rules, resource named by the flow's replication policy) and
// whether the target has it; Apply creates the missing ones (and, when asked, deletes the
// target's ACLs no source ACL maps to) after an ACL backup; Rollback (backup.go) undoes that.
// The contract is on Plan, Apply and Rollback; what MirrorMaker 2 3.7.1 would do instead is
// mm2ACLNote's.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmigrate/kmigrate/internal/agree"
	"github.com/kmigrate/kmigrate/internal/backupfile"
	"github.com/kmigrate/kmigrate/mm2"
)

// ClusterRef names a cluster: its alias (the flow's) and the cluster ID its brokers report.
type ClusterRef = backupfile.ClusterRef

// ACL is one Kafka ACL binding: an access control entry (principal, host, operation,
// permission) on a resource pattern (type, name, pattern type). The enum fields hold Kafka's
// names as kafka-acls prints them: resource types TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
// DELEGATION_TOKEN, USER; pattern types LITERAL, PREFIXED; operations READ, WRITE, ALL, ...;
// permissions ALLOW, DENY.
type ACL struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// String is the ACL as one line, e.g. "ALLOW User:alice READ TOPIC:LITERAL:orders from *".
func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s %s:%s:%s from %s", a.Permission, a.Principal, a.Operation, a.ResourceType, a.PatternType, a.ResourceName, a.Host)
}

// kmsgACL is a in the request enums, or an error naming the field Kafka would not know.
type kmsgACL struct {
	rt   kmsg.ACLResourceType
	pt   kmsg.ACLResourcePatternType
	op   kmsg.ACLOperation
	perm kmsg.ACLPermissionType
}

func (a ACL) enums() (kmsgACL, error) {
	var k kmsgACL
	var err error
	if k.rt, err = kmsg.ParseACLResourceType(a.ResourceType); err != nil || k.rt <= kmsg.ACLResourceTypeAny {
		return k, fmt.Errorf("ACL %s: resource type %q", a, a.ResourceType)
	}
	if k.pt, err = kmsg.ParseACLResourcePatternType(a.PatternType); err != nil ||
		(k.pt != kmsg.ACLResourcePatternTypeLiteral && k.pt != kmsg.ACLResourcePatternTypePrefixed) {
		return k, fmt.Errorf("ACL %s: pattern type %q: want LITERAL or PREFIXED", a, a.PatternType)
	}
	if k.op, err = kmsg.ParseACLOperation(a.Operation); err != nil || k.op <= kmsg.ACLOperationAny {
		return k, fmt.Errorf("ACL %s: operation %q", a, a.Operation)
	}
	if k.perm, err = kmsg.ParseACLPermissionType(a.Permission); err != nil ||
		(k.perm != kmsg.ACLPermissionTypeAllow && k.perm != kmsg.ACLPermissionTypeDeny) {
		return k, fmt.Errorf("ACL %s: permission %q: want ALLOW or DENY", a, a.Permission)
	}
	if a.Principal == "" || a.Host == "" || a.ResourceName == "" {
		return k, fmt.Errorf("ACL %s: empty principal, host or resource name", a)
	}
	return k, nil
}

// WildcardPrincipal is the principal of an ACL for every user.
const WildcardPrincipal = "User:*"

// PrincipalRule maps a principal: a principal that Pattern matches whole becomes Replacement,
// in which $1 or ${1} (${name} for a named group) stands for the text of the group; write ${1}
// when a letter, digit or underscore follows, and $$ for a "$".
type PrincipalRule struct {
	// Text is the rule as given, "REGEX=>REPLACEMENT".
	Text        string
	Pattern     *regexp.Regexp // anchored: matches whole principals only
	Replacement string
}

// ParsePrincipalRule reads "REGEX=>REPLACEMENT" (split at the first "=>"), e.g.
// "User:CN=(.*),O=Finance=>User:CN=$1-mirror,O=Finance".
func ParsePrincipalRule(s string) (PrincipalRule, error) {
	re, repl, ok := strings.Cut(s, "=>")
	if !ok || re == "" {
		return PrincipalRule{}, fmt.Errorf("principal mapping %q: write it as REGEX=>REPLACEMENT, e.g. 'User:(.*)-old=>User:$1-new'", s)
	}
	p, err := regexp.Compile(`^(?:` + re + `)$`)
	if err != nil {
		return PrincipalRule{}, fmt.Errorf("principal mapping %q: regex %q: %v", s, re, err)
	}
	return PrincipalRule{Text: s, Pattern: p, Replacement: repl}, nil
}

// MapPrincipal applies the first rule that matches p whole and says which; a principal no rule
// matches is returned as it is, with rule -1.
func MapPrincipal(rules []PrincipalRule, p string) (mapped string, rule int) {
	for i, r := range rules {
		m := r.Pattern.FindStringSubmatchIndex(p)
		if m == nil {
			continue
		}
		return string(r.Pattern.ExpandString(nil, r.Replacement, p, m)), i
	}
	return p, -1
}

// validPrincipal reports whether p has Kafka's form "Type:name".
func validPrincipal(p string) bool {
	typ, name, ok := strings.Cut(p, ":")
	return ok && typ != "" && name != ""
}

// Status is the verdict for one ACL.
type Status string

// ACL statuses.
const (
	// Missing: the source ACL's image is not on the target; --apply creates it.
	Missing Status = "missing"
	// Present: the target has the source ACL's image.
	Present Status = "present"
	// TargetOnly: a target ACL that is no source ACL's image; --apply --delete-extra
	// deletes it.
	TargetOnly Status = "target-only"
	// Skipped: a source ACL that is not copied; Reason says why.
	Skipped Status = "skipped"
)

// Config says how source ACLs become target ACLs.
type Config struct {
	// Flow names the target topics (its replication policy) and says which topics are
	// mirrored. Default: mm2.NewFlow("source", "target", mm2.IdentityPolicy{}).
	Flow *mm2.Flow
	// Rules map principals, first match wins; a principal no rule matches is kept.
	Rules []PrincipalRule
	// IncludeWildcards copies ACLs of the principal User:* (every user), left out by default.
	IncludeWildcards bool
	// DeleteExtra plans the deletion of the target-only ACLs (Apply then deletes them).
	DeleteExtra bool
	// ReadTimeout bounds each consistent read of a cluster's ACLs (readACLs): how long to wait
	// for every broker to give the same answer. Default: agree.DefaultTimeout (30 s).
	ReadTimeout time.Duration
}

// Item is one row of the plan: a source ACL and its image on the target, or a target-only
// ACL. Principal and ResourceName are the source's (empty for a target-only ACL, which no
// source ACL maps to); TargetPrincipal and TargetResourceName are the target's (empty for a
// source ACL skipped before it had an image, e.g. a topic the flow does not mirror). Resource
// type, pattern type, operation, permission and host are the same on both sides: kreconcile
// never changes them.
type Item struct {
	Principal          string `json:"principal"`
	TargetPrincipal    string `json:"target_principal"`
	ResourceType       string `json:"resource_type"`
	ResourceName       string `json:"resource_name"`
	TargetResourceName string `json:"target_resource_name"`
	PatternType        string `json:"pattern_type"`
	Operation          string `json:"operation"`
	Permission         string `json:"permission"`
	Host               string `json:"host"`
	Status             Status `json:"status"`
	// Reason says why a source ACL is skipped, or how its principal or name was mapped.
	Reason string `json:"reason,omitempty"`
	// MM2 says what MirrorMaker 2 3.7.1's own ACL sync would do with this ACL; MM2Differs is
	// true when that is not what kreconcile does.
	MM2        string `json:"mm2"`
	MM2Differs bool   `json:"mm2_differs"`
	// Action is what Apply did: "created" or "deleted" (confirmed by re-reading the
	// target), empty when it did nothing; Err says why an action failed.
	Action string `json:"action,omitempty"`
	Err    string `json:"error,omitempty"`
}

func (it Item) target() ACL {
	return ACL{Principal: it.TargetPrincipal, Host: it.Host, ResourceType: it.ResourceType, ResourceName: it.TargetResourceName,
		PatternType: it.PatternType, Operation: it.Operation, Permission: it.Permission}
}

// Result is what Plan returns and Apply updates; its JSON form is part of
// kreconcile's interface.
type Result struct {
	SourceCluster ClusterRef `json:"source_cluster"`
	TargetCluster ClusterRef `json:"target_cluster"`
	Flow          string     `json:"flow"`
	Policy        string     `json:"replication_policy"`
	// PrincipalMappings are the rules, as given, in the order they are tried.
	PrincipalMappings []string `json:"principal_mappings"`
	IncludeWildcards  bool     `json:"include_wildcards"`
	DeleteExtra       bool     `json:"delete_extra"`
	// MM2SyncEnabled is the flow's sync.topic.acls.enabled (MM2's default: true).
	MM2SyncEnabled bool `json:"mm2_sync_topic_acls_enabled"`
	// SourceACLs and TargetACLs count the ACLs read on each cluster.
	SourceACLs int    `json:"source_acls"`
	TargetACLs int    `json:"target_acls"`
	ACLs       []Item `json:"acls"`
	// Applied is true when Apply wrote anything; Backup is the file it saved first.
	Applied bool   `json:"applied"`
	Backup  string `json:"backup,omitempty"`
	// ReadBack says how Apply read its writes back (nil when it wrote nothing).
	ReadBack *ReadBack `json:"read_back,omitempty"`
}

// ReadBack is how the writes of an apply or a rollback were read back: the brokers asked,
// and how many rounds and milliseconds it took until every broker showed every write (or the
// wait ended).
type ReadBack struct {
	Brokers  []int32 `json:"brokers"`
	Rounds   int     `json:"rounds"`
	WaitedMS int64   `json:"waited_ms"`
}

func readBack(a agree.Answers[ACL]) *ReadBack {
	return &ReadBack{Brokers: a.Brokers(), Rounds: a.Rounds, WaitedMS: a.Waited.Milliseconds()}
}

// Counts returns how many items have each status.
func (p *Result) Counts() map[Status]int {
	n := map[Status]int{}
	for _, it := range p.ACLs {
		n[it.Status]++
	}
	return n
}

// Changes is the number of writes the plan calls for: missing ACLs (distinct target images),
// plus the target-only ones with DeleteExtra.
func (p *Result) Changes() int {
	c, d := p.writes()
	return len(c) + len(d)
}

// writes returns the distinct target ACLs to create and to delete.
func (p *Result) writes() (create, del []ACL) {
	seen := map[ACL]bool{}
	for _, it := range p.ACLs {
		switch {
		case it.Status == Missing && !seen[it.target()]:
			seen[it.target()] = true
			create = append(create, it.target())
		case it.Status == TargetOnly && p.DeleteExtra:
			del = append(del, it.target())
		}
	}
	return create, del
}

// Plan reads every ACL on the source and on the target (DescribeACLs with a filter that
// matches any ACL; it writes nothing) and plans the target's ACLs.
//
// Each source ACL becomes its image on the target, or is skipped with a reason:
//
//   - The principal is mapped by cfg.Rules (first rule matching the whole principal; none:
//     kept). A rule whose result is not "Type:name" is an error. An ACL of User:* (before or
//     after mapping) is skipped unless cfg.IncludeWildcards.
//   - TOPIC, LITERAL: a topic the flow does not mirror (its topic filter, internal topics,
//     cycles) is skipped; otherwise the name is the flow's target topic. The literal name "*"
//     (every topic) is kept as "*" under the identity policy and skipped under any policy that
//     renames topics, where no single literal means "every mirrored topic".
//   - TOPIC, PREFIXED: the prefix maps through the policy when the policy maps every name
//     starting with the prefix to a name starting with the image of the prefix: the identity
//     policy keeps it (topics ending in "heartbeats", which it renames, aside), the default
//     policy gives "<source alias><separator><prefix>". Another policy: skipped. The flow's
//     topic filter is not applied to a prefix (it cannot say which topics it will cover).
//   - GROUP, CLUSTER and TRANSACTIONAL_ID keep their name and pattern: consumer groups keep
//     their names through MM2 and kmirror, the cluster resource is always "kafka-cluster",
//     and producers keep their transactional.id when they move. The flow's group filter is
//     not applied (a group MM2 does not checkpoint may still be used on the target).
//   - DELEGATION_TOKEN and USER resources are skipped: tokens do not move between clusters.
//
// Operation, permission (DENY rules too), host and pattern type are never changed. The image
// is "present" when the target has exactly that ACL, else "missing". Target ACLs that are no
// source ACL's image (counting images of wildcard ACLs left out) are "target-only". Each item
// says what MM2 3.7.1's sync would do instead. The plan records both cluster IDs.
func Plan(ctx context.Context, src, dst *kgo.Client, cfg Config) (*Result, error) {
	if cfg.Flow == nil {
		cfg.Flow = mm2.NewFlow("source", "target", mm2.IdentityPolicy{})
	}
	f := cfg.Flow
	p := &Result{Flow: f.Name(), IncludeWildcards: cfg.IncludeWildcards, DeleteExtra: cfg.DeleteExtra,
		PrincipalMappings: []string{}, ACLs: []Item{}}
	if f.Policy != nil {
		p.Policy = f.Policy.Name()
	} else {
		p.Policy = mm2.DefaultPolicyClass
	}
	for _, r := range cfg.Rules {
		p.PrincipalMappings = append(p.PrincipalMappings, r.Text)
	}
	enabled, _, err := f.Bool("sync.topic.acls.enabled", true)
	if err != nil {
		return nil, err
	}
	p.MM2SyncEnabled = enabled
	if err := planClusters(ctx, src, dst, f, p); err != nil {
		return nil, err
	}
	srcSet, err := readACLs(ctx, src, f.Source, cfg.ReadTimeout)
	if err != nil {
		return nil, err
	}
	dstSet, err := readACLs(ctx, dst, f.Target, cfg.ReadTimeout)
	if err != nil {
		return nil, err
	}
	srcACLs, dstACLs := sortedACLs(srcSet), sortedACLs(dstSet)
	p.SourceACLs, p.TargetACLs = len(srcACLs), len(dstACLs)
	if p.ACLs, err = planItems(srcACLs, dstACLs, cfg, enabled); err != nil {
		return nil, err
	}
	sortACLItems(p.ACLs)
	return p, nil
}

// planClusters sets the plan's source and target cluster from src and dst, refusing when both are the same cluster.
func planClusters(ctx context.Context, src, dst *kgo.Client, f *mm2.Flow, p *Result) error {
	var errs []error
	for _, side := range []struct {
		cl    *kgo.Client
		alias string
		ref   *ClusterRef
	}{{src, f.Source, &p.SourceCluster}, {dst, f.Target, &p.TargetCluster}} {
		id, err := backupfile.ClusterID(ctx, side.cl, side.alias)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*side.ref = ClusterRef{Alias: side.alias, ID: id}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.SourceCluster.ID == p.TargetCluster.ID {
		return fmt.Errorf("the source cluster %q and the target cluster %q are the same cluster (cluster ID %s): check --source-brokers and --target-brokers (or the MM2 file)",
			f.Source, f.Target, p.SourceCluster.ID)
	}
	return nil
}

// planItems plans each source ACL against the target's ACLs and adds the target ACLs no source ACL maps to.
func planItems(srcACLs, dstACLs []ACL, cfg Config, enabled bool) ([]Item, error) {
	items := []Item{}
	onTarget := map[ACL]bool{}
	for _, a := range dstACLs {
		onTarget[a] = true
	}
	images := map[ACL]bool{}
	for _, a := range srcACLs {
		it, err := planACL(a, cfg, enabled)
		if err != nil {
			return nil, err
		}
		if it.TargetPrincipal != "" && it.TargetResourceName != "" {
			images[it.target()] = true
		}
		if it.Status != Skipped {
			it.Status = Missing
			if onTarget[it.target()] {
				it.Status = Present
			}
		}
		items = append(items, it)
	}
	for _, a := range dstACLs {
		if images[a] {
			continue
		}
		items = append(items, Item{TargetPrincipal: a.Principal, ResourceType: a.ResourceType, TargetResourceName: a.ResourceName,
			PatternType: a.PatternType, Operation: a.Operation, Permission: a.Permission, Host: a.Host, Status: TargetOnly,
			Reason: "no source ACL maps to it", MM2: "MM2 never deletes target ACLs"})
	}
	return items, nil
}

var statusRank = map[Status]int{Missing: 0, TargetOnly: 1, Skipped: 2, Present: 3}

func sortACLItems(items []Item) {
	key := func(it Item) string {
		return strings.Join([]string{it.ResourceType, it.ResourceName, it.TargetResourceName, it.PatternType, it.Principal,
			it.TargetPrincipal, it.Operation, it.Permission, it.Host}, "\x00")
	}
	sort.SliceStable(items, func(i, j int) bool {
		if ri, rj := statusRank[items[i].Status], statusRank[items[j].Status]; ri != rj {
			return ri < rj
		}
		return key(items[i]) < key(items[j])
	})
}

// planACL maps one source ACL: the item has Status Skipped with a Reason, or an image
// (Status left for the caller).
func planACL(a ACL, cfg Config, mm2Enabled bool) (Item, error) {
	it := Item{Principal: a.Principal, ResourceType: a.ResourceType, ResourceName: a.ResourceName, PatternType: a.PatternType,
		Operation: a.Operation, Permission: a.Permission, Host: a.Host}
	name, why := targetResource(a, cfg.Flow)
	it.TargetResourceName = name
	var notes []string
	if name != "" && name != a.ResourceName {
		notes = append(notes, fmt.Sprintf("resource %s becomes %s (%s)", a.ResourceName, name, policyName(cfg.Flow)))
	}
	tp, rule := MapPrincipal(cfg.Rules, a.Principal)
	if !validPrincipal(tp) {
		return it, fmt.Errorf("principal mapping %q turns principal %q (ACL %s) into %q, which is not a principal (Type:name): fix the rule",
			cfg.Rules[rule].Text, a.Principal, a, tp)
	}
	it.TargetPrincipal = tp
	if rule >= 0 {
		notes = append(notes, fmt.Sprintf("principal mapped by %q", cfg.Rules[rule].Text))
	}
	switch {
	case why != "":
		it.Status, it.Reason = Skipped, why
	case !cfg.IncludeWildcards && (a.Principal == WildcardPrincipal || tp == WildcardPrincipal):
		it.Status = Skipped
		it.Reason = "wildcard principal User:* (every user): left out; --include-wildcards copies it"
	default:
		it.Reason = strings.Join(notes, "; ")
	}
	it.MM2, it.MM2Differs = mm2ACLNote(a, it, cfg.Flow, mm2Enabled)
	return it, nil
}

func policyName(f *mm2.Flow) string {
	if f.Policy == nil {
		return "DefaultReplicationPolicy"
	}
	n := f.Policy.Name()
	return n[strings.LastIndex(n, ".")+1:]
}

// targetResource is the resource name of a's image on the target, or why a has none.
func targetResource(a ACL, f *mm2.Flow) (name, why string) {
	_, identity := f.Policy.(mm2.IdentityPolicy)
	switch a.ResourceType {
	case "TOPIC":
	case "GROUP", "CLUSTER", "TRANSACTIONAL_ID":
		return a.ResourceName, ""
	default:
		return "", fmt.Sprintf("resource type %s: not copied (delegation tokens and their users do not move between clusters)", a.ResourceType)
	}
	switch {
	case a.PatternType == "LITERAL" && a.ResourceName == "*":
		if identity {
			return "*", ""
		}
		return "", fmt.Sprintf("literal topic * (every topic): under %s the mirrored topics are renamed and no literal name covers them; grant on them by hand (e.g. a PREFIXED pattern %s)",
			policyName(f), f.TargetTopic(""))
	case a.PatternType == "LITERAL":
		if ok, why := f.TopicMirrored(a.ResourceName); !ok {
			return "", why
		}
		return f.TargetTopic(a.ResourceName), ""
	case a.PatternType == "PREFIXED":
		switch f.Policy.(type) {
		case mm2.IdentityPolicy:
			return a.ResourceName, ""
		case mm2.DefaultPolicy, nil:
			return f.TargetTopic(a.ResourceName), ""
		}
		return "", fmt.Sprintf("prefixed topic pattern: the replication policy %s does not say how it maps prefixes", policyName(f))
	}
	return "", fmt.Sprintf("pattern type %s: not copied", a.PatternType)
}

// mm2ACLNote says what MirrorMaker 2 3.7.1's MirrorSourceConnector would do with source ACL a
// (sync.topic.acls.enabled, every sync.topic.acls.interval.seconds): it reads the source's
// TOPIC ACLs only; keeps LITERAL patterns only; drops ALLOW WRITE (DENY WRITE is kept); drops
// topics it does not mirror; names the topic with the policy; turns ALLOW ALL into ALLOW READ;
// keeps principal, host and every other operation and permission (User:* too) as they are;
// creates, never deletes. differs is true when that is not what it (kreconcile's plan) does.
func mm2ACLNote(a ACL, it Item, f *mm2.Flow, enabled bool) (note string, differs bool) {
	copied := it.Status != Skipped
	var skip string
	switch {
	case !enabled:
		skip = "sync.topic.acls.enabled=false: MM2 copies no ACL"
	case a.ResourceType != "TOPIC":
		skip = "MM2 copies topic ACLs only"
	case a.PatternType != "LITERAL":
		skip = "MM2 copies LITERAL topic patterns only"
	case a.Permission == "ALLOW" && a.Operation == "WRITE":
		skip = "MM2 does not copy ALLOW WRITE"
	case !f.TopicMatches(a.ResourceName):
		skip = "MM2 does not copy it either (topic not mirrored)"
	}
	if skip != "" {
		return skip, copied
	}
	mm := ACL{Principal: a.Principal, Host: a.Host, ResourceType: "TOPIC", ResourceName: f.TargetTopic(a.ResourceName),
		PatternType: "LITERAL", Operation: a.Operation, Permission: a.Permission}
	if a.Permission == "ALLOW" && a.Operation == "ALL" {
		mm.Operation = "READ"
	}
	if !copied {
		return "MM2 copies it as " + mm.String(), true
	}
	var diffs []string
	if mm.Operation != a.Operation {
		diffs = append(diffs, "MM2 downgrades ALLOW ALL to ALLOW READ")
	}
	if mm.Principal != it.TargetPrincipal {
		diffs = append(diffs, "MM2 keeps principal "+mm.Principal+" (no mapping)")
	}
	if mm.ResourceName != it.TargetResourceName {
		diffs = append(diffs, "MM2 names it "+mm.ResourceName)
	}
	if len(diffs) == 0 {
		return "same as MM2", false
	}
	return strings.Join(diffs, "; "), true
}

// describeAllACLs reads every ACL that one broker (or, given a client, any broker) of the
// cluster connected to as alias shows.
func describeAllACLs(ctx context.Context, cl kmsg.Requestor, alias string) ([]ACL, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("%s cluster: describe ACLs: %w", alias, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			return nil, fmt.Errorf("%s cluster: describe ACLs: %w: the brokers run no authorizer (authorizer.class.name is not set), so they hold no ACLs and would enforce none: set one (kafka.security.auth.SimpleAclAuthorizer on ZooKeeper clusters before 2.4, kafka.security.authorizer.AclAuthorizer after, org.apache.kafka.metadata.authorizer.StandardAuthorizer on KRaft)", alias, err)
		}
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return nil, fmt.Errorf("%s cluster: describe ACLs: %w%s", alias, err, msg)
	}
	var out []ACL
	for _, r := range resp.Resources {
		for _, e := range r.ACLs {
			out = append(out, ACL{Principal: e.Principal, Host: e.Host, ResourceType: r.ResourceType.String(), ResourceName: r.ResourceName,
				PatternType: r.ResourcePatternType.String(), Operation: e.Operation.String(), Permission: e.PermissionType.String()})
		}
	}
	return out, nil
}

// createACLs creates acls on cl and returns, per ACL, the error the broker gave (nil: created).
func createACLs(ctx context.Context, cl *kgo.Client, acls []ACL) []error {
	errs := make([]error, len(acls))
	if len(acls) == 0 {
		return errs
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for i, a := range acls {
		k, err := a.enums()
		if err != nil {
			errs[i] = err
			continue
		}
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = k.rt, a.ResourceName, k.pt
		c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, k.op, k.perm
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, cl)
	n := 0
	if err == nil {
		n = len(resp.Results)
	}
	answerErrs(errs, err, n, func(j int) (int16, *string) { return resp.Results[j].ErrorCode, resp.Results[j].ErrorMessage })
	return errs
}

// deleteACLs deletes exactly acls on cl (one filter per ACL, every field given, so that no
// other ACL matches) and returns, per ACL, the error the broker gave (nil: deleted or absent).
func deleteACLs(ctx context.Context, cl *kgo.Client, acls []ACL) []error {
	errs := make([]error, len(acls))
	if len(acls) == 0 {
		return errs
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for i, a := range acls {
		k, err := a.enums()
		if err != nil {
			errs[i] = err
			continue
		}
		fl := kmsg.NewDeleteACLsRequestFilter()
		fl.ResourceType, fl.ResourceName, fl.ResourcePatternType = k.rt, kmsg.StringPtr(a.ResourceName), k.pt
		fl.Principal, fl.Host, fl.Operation, fl.PermissionType = kmsg.StringPtr(a.Principal), kmsg.StringPtr(a.Host), k.op, k.perm
		req.Filters = append(req.Filters, fl)
	}
	resp, err := req.RequestWith(ctx, cl)
	n := 0
	if err == nil {
		n = len(resp.Results)
	}
	answerErrs(errs, err, n, func(j int) (int16, *string) { return resp.Results[j].ErrorCode, resp.Results[j].ErrorMessage })
	return errs
}

// answerErrs fills errs, one per ACL of a create or delete request, from the broker's answers:
// the ACLs that already have an error were not sent, the others take the next of n results in
// order (result(j) gives its code and message); with reqErr set, every ACL sent failed with it.
func answerErrs(errs []error, reqErr error, n int, result func(j int) (int16, *string)) {
	j := 0
	for i := range errs {
		if errs[i] != nil {
			continue
		}
		switch {
		case reqErr != nil:
			errs[i] = reqErr
		case j >= n:
			errs[i] = errors.New("the broker did not answer for this ACL")
		default:
			code, msg := result(j)
			if e := kerr.ErrorForCode(code); e != nil {
				if msg != nil && *msg != "" {
					e = fmt.Errorf("%w: %s", e, *msg)
				}
				errs[i] = e
			}
		}
		j++
	}
}

// ApplyConfig says where Apply saves its backup.
type ApplyConfig struct {
	// Backup is the backup file to write; it must not exist. Default: DefaultBackupName.
	Backup string
	// Now is the clock for the backup's time and default name. Default: time.Now.
	Now func() time.Time
	// ReadTimeout bounds each read of the target's ACLs (before the writes and after them):
	// how long to wait for every broker to give the same answer. Default: 30 s.
	ReadTimeout time.Duration
}

// DefaultBackupName is the ACL backup file Apply writes when ApplyConfig.Backup is
// empty.
func DefaultBackupName(now time.Time) string {
	return "kreconcile-acls-backup-" + now.UTC().Format("20060102T150405Z") + ".json"
}

// Apply makes the plan's writes on dst, the plan's target cluster (refused, nothing
// written, when dst's cluster ID is another): it creates the missing ACLs and, when the plan
// has DeleteExtra, deletes the target-only ones. It first re-reads the target's ACLs
// (readACLs: every broker's answer, once they agree) and keeps only the writes still needed
// (an ACL created or deleted since the plan is left alone), then writes the ACL backup
// (backup.go: both cluster IDs and exactly the ACLs it is about to create and to delete;
// written whole or not at all, never over an existing file) and only then writes. Afterwards
// it reads the target again from every broker, waiting (within cfg.ReadTimeout) until each
// shows every write, and sets each item's Action ("created", "deleted") or Err: a write a
// broker still does not reflect at the bound is an error that names that broker. With nothing
// to write it writes no backup and returns nil. The error names every ACL that was not created
// or deleted; brokers that never agree before the writes stop it before the backup, nothing
// written.
func Apply(ctx context.Context, dst *kgo.Client, p *Result, cfg ApplyConfig) error {
	alias := p.TargetCluster.Alias
	id, err := backupfile.ClusterID(ctx, dst, alias)
	if err != nil {
		return err
	}
	if id != p.TargetCluster.ID {
		return fmt.Errorf("refusing to apply: the plan is for target cluster %q (cluster ID %s), but the client is connected to cluster ID %s. Nothing was written",
			alias, p.TargetCluster.ID, id)
	}
	create, del := p.writes()
	if len(create)+len(del) == 0 {
		return nil
	}
	has, err := readACLs(ctx, dst, alias, cfg.ReadTimeout)
	if err != nil {
		return fmt.Errorf("%w. Nothing was written", err)
	}
	create = filterACLs(create, func(a ACL) bool { return !has[a] })
	del = filterACLs(del, func(a ACL) bool { return has[a] })
	if len(create)+len(del) == 0 {
		return nil
	}
	path, err := backupACLWrites(p, cfg, create, del)
	if err != nil {
		return err
	}
	p.Backup = path
	p.Applied = true
	cerrs := createACLs(ctx, dst, create)
	derrs := deleteACLs(ctx, dst, del)
	after, rerr := readACLWrites(ctx, dst, alias, cfg.ReadTimeout, accepted(create, cerrs), accepted(del, derrs))
	if rerr == nil {
		p.ReadBack = readBack(after)
	}
	outcome, failed := checkACLWrites(create, del, cerrs, derrs, after, rerr)
	for i := range p.ACLs {
		it := &p.ACLs[i]
		if it.Status != Missing && it.Status != TargetOnly {
			continue
		}
		a := it.target()
		if msg, ok := failed[a]; ok {
			it.Err = msg
			continue
		}
		if act := outcome[a]; act != "" && (act == "created") == (it.Status == Missing) {
			it.Action = act
		}
	}
	return aclErrors(alias, failed)
}

// backupACLWrites writes the ACL backup of the plan's writes create and del and returns its path.
func backupACLWrites(p *Result, cfg ApplyConfig, create, del []ACL) (string, error) {
	clock := cfg.Now
	if clock == nil {
		clock = time.Now
	}
	t := clock()
	path := cfg.Backup
	if path == "" {
		path = DefaultBackupName(t)
	}
	b := &Backup{Kind: backupfile.ACLs, Version: BackupVersion, Holds: backupHolds, Taken: t.UTC(),
		SourceCluster: p.SourceCluster, TargetCluster: p.TargetCluster, CreatedACLs: nonNil(create), DeletedACLs: nonNil(del)}
	if err := backupfile.Create(path, b); err != nil {
		return "", err
	}
	return path, nil
}

// checkACLWrites says, from the brokers' answers to the writes and the target read again after
// them (after, or its error rerr), which ACLs were created or deleted (outcome) and why the
// others were not (failed).
func checkACLWrites(create, del []ACL, cerrs, derrs []error, after agree.Answers[ACL], rerr error) (outcome, failed map[ACL]string) {
	outcome, failed = map[ACL]string{}, map[ACL]string{}
	for i, a := range create {
		switch {
		case cerrs[i] != nil:
			failed[a] = "create: " + cerrs[i].Error()
		case rerr != nil:
			failed[a] = "created, but re-reading the target failed: " + rerr.Error()
		default:
			if why := notShown(after, a, true, "creation"); why != "" {
				failed[a] = why
				continue
			}
			outcome[a] = "created"
		}
	}
	for i, a := range del {
		switch {
		case derrs[i] != nil:
			failed[a] = "delete: " + derrs[i].Error()
		case rerr != nil:
			failed[a] = "deleted, but re-reading the target failed: " + rerr.Error()
		default:
			if why := notShown(after, a, false, "deletion"); why != "" {
				failed[a] = why
				continue
			}
			outcome[a] = "deleted"
		}
	}
	return outcome, failed
}

// aclErrors joins one error per failed ACL, in ACL order, naming the cluster alias (nil: none failed).
func aclErrors(alias string, failed map[ACL]string) error {
	var errs []error
	for _, a := range sortedACLs(failed) {
		errs = append(errs, fmt.Errorf("%s cluster: ACL %s: %s", alias, a, failed[a]))
	}
	return errors.Join(errs...)
}

func filterACLs(acls []ACL, keep func(ACL) bool) []ACL {
	var out []ACL
	for _, a := range acls {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

func nonNil(acls []ACL) []ACL {
	if acls == nil {
		return []ACL{}
	}
	return acls
}

// sortedACLs lists the keys of m in ACL order.
func sortedACLs[V any](m map[ACL]V) []ACL {
	out := make([]ACL, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
