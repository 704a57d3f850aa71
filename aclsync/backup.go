package aclsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/agree"
	"github.com/kmigrate/kmigrate/internal/backupfile"
)

// BackupVersion is the format version of the ACL backups Apply writes.
const BackupVersion = 1

const backupHolds = "Kafka ACLs: the ACLs kreconcile acls --apply created on the target cluster and the ACLs it deleted there; kreconcile rollback --backup FILE deletes the created ones and creates the deleted ones again"

// Backup is what Apply saves before writing and Rollback undoes: exactly the ACLs
// it was about to create on the target cluster and those it was about to delete there.
type Backup struct {
	// Kind is backupfile.ACLs; Holds says the same in words, for whoever opens the file.
	Kind    string    `json:"kind"`
	Version int       `json:"version"`
	Holds   string    `json:"holds"`
	Taken   time.Time `json:"created"`
	// SourceCluster and TargetCluster are the plan's clusters; Rollback writes only to a
	// cluster whose ID is TargetCluster.ID.
	SourceCluster ClusterRef `json:"source_cluster"`
	TargetCluster ClusterRef `json:"target_cluster"`
	CreatedACLs   []ACL      `json:"acls_created"`
	DeletedACLs   []ACL      `json:"acls_deleted"`
}

// ReadBackup reads and validates an ACL backup: kind "acls", version BackupVersion,
// nothing after the JSON value, both cluster IDs, and every ACL complete (known resource
// type, LITERAL or PREFIXED, a known operation, ALLOW or DENY, non-empty principal, host and
// name) and listed once.
func ReadBackup(path string) (*Backup, error) {
	var b Backup
	if err := backupfile.Decode(path, &b, true, "ACL backup", "kreconcile acls --apply"); err != nil {
		return nil, err
	}
	if err := b.validate(); err != nil {
		return nil, fmt.Errorf("ACL backup %s: %w", path, err)
	}
	return &b, nil
}

func (b *Backup) validate() error {
	switch {
	case b.Kind != backupfile.ACLs:
		return fmt.Errorf("kind %q: an ACL backup says %q", b.Kind, backupfile.ACLs)
	case b.Version != BackupVersion:
		return fmt.Errorf("version %d: this kreconcile reads ACL backups of version %d", b.Version, BackupVersion)
	case b.TargetCluster.ID == "" || b.SourceCluster.ID == "":
		return errors.New("it names no source or target cluster ID: it was not written by kreconcile acls --apply")
	}
	var errs []error
	seen := map[ACL]string{}
	for _, l := range []struct {
		what string
		acls []ACL
	}{{"acls_created", b.CreatedACLs}, {"acls_deleted", b.DeletedACLs}} {
		for i, a := range l.acls {
			if _, err := a.enums(); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", l.what, i, err))
				continue
			}
			if w, dup := seen[a]; dup {
				errs = append(errs, fmt.Errorf("%s[%d]: ACL %s is listed twice (also in %s)", l.what, i, a, w))
			}
			seen[a] = l.what
		}
	}
	return errors.Join(errs...)
}

// RollbackConfig tunes Rollback.
type RollbackConfig struct {
	// TargetAlias names the connected cluster in messages. Default: "target".
	TargetAlias string
	// ReadTimeout bounds each read of the target's ACLs: how long to wait for every broker to
	// give the same answer. Default: 30 s (agree.DefaultTimeout).
	ReadTimeout time.Duration
}

// RollbackResult is what Rollback did.
type RollbackResult struct {
	Backup string `json:"backup"`
	// TargetCluster is the cluster written to (the backup's, checked by its cluster ID).
	TargetCluster ClusterRef   `json:"target_cluster"`
	ACLs          []RolledBack `json:"acls"`
	// ReadBack says how the rollback's writes were read back (nil when it wrote nothing).
	ReadBack *ReadBack `json:"read_back,omitempty"`
}

// RolledBack is one ACL of an ACL rollback. Was is "created" or "deleted" (what the apply
// did); Action is what the rollback did: "deleted" (an ACL the apply created), "recreated" (an
// ACL the apply deleted), or "unchanged" (already so: deleted or created again since); Err
// says why it failed.
type RolledBack struct {
	ACL
	Was    string `json:"was"`
	Action string `json:"action"`
	Err    string `json:"error,omitempty"`
}

// Failed counts the ACLs whose rollback failed.
func (r *RollbackResult) Failed() int {
	n := 0
	for _, a := range r.ACLs {
		if a.Err != "" {
			n++
		}
	}
	return n
}

// Rollback undoes an ACL apply on dst: it deletes exactly the ACLs the apply created
// (each by a filter naming every field, so that no other ACL matches: an ACL added on the
// target since is kept) and creates again those it deleted. An ACL already as the rollback
// would leave it is "unchanged". What is on the target is read from every broker, once they
// agree (readACLs, within cfg.ReadTimeout), before the writes; brokers that still differ stop
// it there, nothing written. After the writes it reads every broker again until each shows
// every change (or the wait ends, and the ACLs a broker does not reflect are errors naming it).
//
// It refuses, writing nothing and returning a nil result: an invalid backup (ReadBackup),
// and a cluster whose ID is not the backup's target cluster (the source, or any other). The
// error names every ACL that failed.
func Rollback(ctx context.Context, dst *kgo.Client, backupFile string, cfg RollbackConfig) (*RollbackResult, error) {
	b, err := ReadBackup(backupFile)
	if err != nil {
		return nil, err
	}
	alias, id, err := backupfile.Connected(ctx, dst, cfg.TargetAlias)
	if err != nil {
		return nil, err
	}
	if err := backupfile.CheckTarget(backupFile, b.SourceCluster, b.TargetCluster, alias, id); err != nil {
		return nil, err
	}
	has, err := readACLs(ctx, dst, alias, cfg.ReadTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w. Nothing was written", err)
	}
	out := &RollbackResult{Backup: backupFile, TargetCluster: ClusterRef{Alias: alias, ID: id}}
	var del, create []ACL
	out.ACLs, del, create = rollbackWrites(b, has)
	derrs := deleteACLs(ctx, dst, del)
	cerrs := createACLs(ctx, dst, create)
	failed := map[ACL]string{}
	for i, a := range del {
		if derrs[i] != nil {
			failed[a] = "delete: " + derrs[i].Error()
		}
	}
	for i, a := range create {
		if cerrs[i] != nil {
			failed[a] = "create again: " + cerrs[i].Error()
		}
	}
	if len(del)+len(create) > 0 {
		after, rerr := readACLWrites(ctx, dst, alias, cfg.ReadTimeout, accepted(create, cerrs), accepted(del, derrs))
		if rerr == nil {
			out.ReadBack = readBack(after)
		}
		checkRollback(out.ACLs, failed, after, rerr)
	}
	for i := range out.ACLs {
		if msg, bad := failed[out.ACLs[i].ACL]; bad {
			out.ACLs[i].Err = msg
		}
	}
	return out, aclErrors(alias, failed)
}

// rollbackWrites lists, for every ACL of backup b, what undoing it does given the target's ACLs has, and the ACLs to delete and to create again.
func rollbackWrites(b *Backup, has map[ACL]bool) (acls []RolledBack, del, create []ACL) {
	acls = []RolledBack{}
	for _, a := range b.CreatedACLs {
		r := RolledBack{ACL: a, Was: "created", Action: "unchanged"}
		if has[a] {
			r.Action = "deleted"
			del = append(del, a)
		}
		acls = append(acls, r)
	}
	for _, a := range b.DeletedACLs {
		r := RolledBack{ACL: a, Was: "deleted", Action: "unchanged"}
		if !has[a] {
			r.Action = "recreated"
			create = append(create, a)
		}
		acls = append(acls, r)
	}
	return acls, del, create
}

// checkRollback adds to failed each ACL of acls the brokers accepted to change but the target
// read again after the writes (after, or its error rerr) does not show changed on every broker.
func checkRollback(acls []RolledBack, failed map[ACL]string, after agree.Answers[ACL], rerr error) {
	for i := range acls {
		r := &acls[i]
		if _, bad := failed[r.ACL]; bad || r.Action == "unchanged" {
			continue
		}
		if rerr != nil {
			failed[r.ACL] = "re-reading the target failed: " + rerr.Error()
			continue
		}
		what, present := "deletion", false
		if r.Action == "recreated" {
			what, present = "creation", true
		}
		if why := notShown(after, r.ACL, present, what); why != "" {
			failed[r.ACL] = why
		}
	}
}
