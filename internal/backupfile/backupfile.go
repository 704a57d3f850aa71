package backupfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/atomicfile"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
)

// ClusterRef names a cluster: its alias (the flow's) and the cluster ID its brokers report.
type ClusterRef struct {
	Alias string `json:"alias"`
	ID    string `json:"id"`
}

// ClusterID returns the cluster ID the brokers of cl report (clustermeta.ID) and refuses a
// cluster that reports none: kreconcile cannot tell it from another cluster.
func ClusterID(ctx context.Context, cl *kgo.Client, alias string) (string, error) {
	id, err := clustermeta.ID(ctx, cl, alias)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("%s cluster reports no cluster ID (Kafka before 0.10.1?): kreconcile cannot tell it from another cluster and does not write to it", alias)
	}
	return id, nil
}

// Connected returns the name the cluster of cl goes by in errors (alias, else "target") and
// its cluster ID, which a rollback compares with its backup's.
func Connected(ctx context.Context, cl *kgo.Client, alias string) (name, id string, err error) {
	name = alias
	if name == "" {
		name = "target"
	}
	id, err = ClusterID(ctx, cl, name)
	return name, id, err
}

// Backup kinds: what a kreconcile backup file holds (its "kind" key; a file without one is a
// consumer group offsets backup, as every earlier kreconcile wrote).
const (
	Groups = "groups"
	ACLs   = "acls"
	// State is a Kafka Streams state directory's .checkpoint files (kreconcile state --apply).
	State = "state"
)

// Kind reads the kind of a backup file: Groups for a file without a "kind" key or with
// "groups" (kreconcile groups --apply), ACLs for "acls" (kreconcile acls --apply), State for
// "state" (kreconcile state --apply); anything else is an error.
func Kind(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("open backup: %w", err)
	}
	var k struct {
		Kind string `json:"kind"`
	}
	// The first JSON value only: the reader of each kind judges what follows it.
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&k); err != nil {
		return "", fmt.Errorf("read backup %s: %w (is it a file kreconcile groups --apply or acls --apply wrote?)", path, err)
	}
	switch k.Kind {
	case "", Groups:
		return Groups, nil
	case ACLs, State:
		return k.Kind, nil
	}
	return "", fmt.Errorf("backup %s holds %q: this kreconcile reads backups of consumer group offsets (groups), of ACLs (acls) and of state directories (state)", path, k.Kind)
}

// Decode reads path as exactly one JSON value into v (with strict, no unknown field); the
// errors call the file a what and name the command that writes it.
func Decode(path string, v any, strict bool, what, writer string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("open backup: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("read %s %s: %w (is it a file %s wrote?)", what, path, err, writer)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("read %s %s: unexpected bytes after the JSON value at byte %d: the file is not what kreconcile wrote", what, path, dec.InputOffset())
	}
	return nil
}

// Create writes b as JSON to path, which must not exist: to a temporary file in the same
// directory (mode 0600), fsynced, then linked to path (never replacing a file there) and the
// directory fsynced, so that path holds either nothing or the whole backup, durably.
func Create(path string, b any) error {
	exists := fmt.Errorf("backup file %s exists: choose another with --backup", path)
	if _, err := os.Lstat(path); err == nil {
		return exists
	}
	f, err := encode(path, b)
	if err != nil {
		return fmt.Errorf("create backup file in %s (choose another with --backup): %w", filepath.Dir(path), err)
	}
	defer f.Discard()
	if err := f.Link(); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return exists
		}
		return fmt.Errorf("write backup %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(path); err != nil {
		return fmt.Errorf("write backup %s: sync directory: %w", path, err)
	}
	return nil
}

// Replace writes b over the backup at path (kreconcile groups --follow, whose backup grows
// with each group): the same temporary file, renamed over path, the directory fsynced. path
// holds the old backup or the new one, whole.
func Replace(path string, b any) error {
	f, err := encode(path, b)
	if err != nil {
		return fmt.Errorf("rewrite backup %s: %w", path, err)
	}
	defer f.Discard()
	if err := f.Replace(); err != nil {
		return fmt.Errorf("rewrite backup %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(path); err != nil {
		return fmt.Errorf("rewrite backup %s: sync directory: %w", path, err)
	}
	return nil
}

// encode writes b as indented JSON to a new temporary file beside path (mode 0600), for the
// caller to put in place or discard.
func encode(path string, b any) (*atomicfile.File, error) {
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return nil, err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		f.Discard()
		return nil, fmt.Errorf("encode: %w", err)
	}
	return f, nil
}

// CheckTarget refuses backupFile, taken by an apply from source to target, on the cluster
// connected to as alias, whose cluster ID is id, unless id is the target's: the apply's
// source, or any other cluster, is refused with an error saying which cluster to connect to.
func CheckTarget(backupFile string, source, target ClusterRef, alias, id string) error {
	switch id {
	case target.ID:
		return nil
	case source.ID:
		return fmt.Errorf("refusing backup %s: the cluster you connected to as %q (cluster ID %s) is the source cluster %q of that apply; the backup belongs to the target cluster %q (cluster ID %s): connect to it (--target-brokers, or --mm2-config with --flow). Nothing was written",
			backupFile, alias, id, source.Alias, target.Alias, target.ID)
	}
	return fmt.Errorf("refusing backup %s: the cluster you connected to as %q has cluster ID %s, but the backup was taken on the target cluster %q (cluster ID %s; its source was %q, cluster ID %s): connect to that cluster. Nothing was written",
		backupFile, alias, id, target.Alias, target.ID, source.Alias, source.ID)
}
