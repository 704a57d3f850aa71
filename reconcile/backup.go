package reconcile

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
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmigrate/kmigrate/internal/atomicfile"
	"github.com/kmigrate/kmigrate/internal/clustermeta"
)

// BackupVersion is the format version of the backup files Apply writes. Version 2 records the
// clusters (alias and cluster ID) and, per partition, the offset Apply committed. Version 1
// files (written by an earlier kreconcile) record neither: Rollback reads them only when told
// the cluster ID (RollbackConfig.LegacyClusterID).
const BackupVersion = 2

const legacyBackupVersion = 1

// Backup is what Apply saves before writing and Rollback restores: the target offsets of every
// group partition Apply was about to change, as they were, and what it was about to write.
type Backup struct {
	// Kind is empty in the files Apply writes (and "groups" is read as the same); a file of
	// another kind (an ACL backup, ACLBackupKind) is refused by ReadBackup.
	Kind    string    `json:"kind,omitempty"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// SourceCluster and TargetCluster are the clusters of the plan; Rollback writes only to a
	// cluster whose ID is TargetCluster.ID.
	SourceCluster ClusterRef    `json:"source_cluster"`
	TargetCluster ClusterRef    `json:"target_cluster"`
	Entries       []BackupEntry `json:"entries"`
}

// BackupEntry is one group partition's previous target commit. MarshalJSON and UnmarshalJSON
// give its form in the file (backupEntryJSON), hence no tags here.
type BackupEntry struct {
	Group     string
	Topic     string
	Partition int32
	// Offset is the commit before Apply, nil ("none" in the file) when the group had none
	// there: Rollback then deletes the commit Apply made.
	Offset *int64
	// Committed is the offset Apply committed (nil only in version 1 files): Rollback restores
	// a partition only while the target commit is still that one.
	Committed *int64
	// Metadata is the previous commit's metadata, committed again by Rollback.
	Metadata string
}

type backupEntryJSON struct {
	Group     string          `json:"group"`
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    json.RawMessage `json:"offset"`
	Committed *int64          `json:"committed,omitempty"`
	Metadata  string          `json:"metadata"`
}

// MarshalJSON writes Offset as a number, or the string "none".
func (e BackupEntry) MarshalJSON() ([]byte, error) {
	off := json.RawMessage(`"none"`)
	if e.Offset != nil {
		off = json.RawMessage(fmt.Sprint(*e.Offset))
	}
	return json.Marshal(backupEntryJSON{e.Group, e.Topic, e.Partition, off, e.Committed, e.Metadata})
}

// UnmarshalJSON reads what MarshalJSON writes and refuses negative offsets.
func (e *BackupEntry) UnmarshalJSON(b []byte) error {
	var j backupEntryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = BackupEntry{Group: j.Group, Topic: j.Topic, Partition: j.Partition, Committed: j.Committed, Metadata: j.Metadata}
	if j.Committed != nil && *j.Committed < 0 {
		return fmt.Errorf("group %q %s/%d: committed offset %d is negative", j.Group, j.Topic, j.Partition, *j.Committed)
	}
	if len(j.Offset) == 0 {
		return fmt.Errorf("group %q %s/%d: no offset: want a number or \"none\"", j.Group, j.Topic, j.Partition)
	}
	var s string
	if json.Unmarshal(j.Offset, &s) == nil {
		if s != "none" {
			return fmt.Errorf("group %q %s/%d: offset %q: want a number or \"none\"", j.Group, j.Topic, j.Partition, s)
		}
		return nil
	}
	var n int64
	if err := json.Unmarshal(j.Offset, &n); err != nil {
		return fmt.Errorf("group %q %s/%d: offset: %w", j.Group, j.Topic, j.Partition, err)
	}
	if n < 0 {
		return fmt.Errorf("group %q %s/%d: offset %d is negative: want a number >= 0 or \"none\"", j.Group, j.Topic, j.Partition, n)
	}
	e.Offset = &n
	return nil
}

// DefaultBackupName is the backup file Apply writes when ApplyConfig.Backup is empty.
func DefaultBackupName(now time.Time) string {
	return "kreconcile-backup-" + now.UTC().Format("20060102T150405Z") + ".json"
}

// ReadBackup reads and validates a backup file written by Apply (version 2, or version 1 of
// the previous kreconcile). It refuses anything else: unknown versions, bytes after the JSON
// value, empty group or topic names, negative partitions or offsets, a partition listed twice,
// and version 2 files without cluster IDs or committed offsets.
func ReadBackup(path string) (*Backup, error) {
	var b Backup
	if err := decodeBackupFile(path, &b, false, "backup", "kreconcile groups --apply"); err != nil {
		return nil, err
	}
	if err := b.validate(); err != nil {
		return nil, fmt.Errorf("backup %s: %w", path, err)
	}
	return &b, nil
}

// decodeBackupFile reads path as exactly one JSON value into v (with strict, no unknown
// field); the errors call the file a what and name the command that writes it.
func decodeBackupFile(path string, v any, strict bool, what, writer string) error {
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

func (b *Backup) validate() error {
	if b.Kind == ACLBackupKind {
		return errors.New("it is an ACL backup (kreconcile acls --apply), not a backup of consumer group offsets: kreconcile rollback reads both kinds")
	}
	if b.Kind != "" && b.Kind != GroupsBackupKind {
		return fmt.Errorf("it holds %q, not consumer group offsets", b.Kind)
	}
	if b.Version != BackupVersion && b.Version != legacyBackupVersion {
		return fmt.Errorf("version %d: this kreconcile reads versions %d and %d", b.Version, legacyBackupVersion, BackupVersion)
	}
	if b.Version == BackupVersion {
		if b.TargetCluster.ID == "" {
			return errors.New("it names no target cluster ID: it was not written by kreconcile groups --apply")
		}
		if b.SourceCluster.ID == "" {
			return errors.New("it names no source cluster ID: it was not written by kreconcile groups --apply")
		}
	}
	type key struct {
		g, t string
		p    int32
	}
	seen := map[key]bool{}
	var errs []error
	for i, e := range b.Entries {
		switch {
		case e.Group == "":
			errs = append(errs, fmt.Errorf("entry %d: empty group name", i))
		case e.Topic == "":
			errs = append(errs, fmt.Errorf("entry %d (group %q): empty topic name", i, e.Group))
		case e.Partition < 0:
			errs = append(errs, fmt.Errorf("entry %d (group %q %s): partition %d", i, e.Group, e.Topic, e.Partition))
		case b.Version == BackupVersion && e.Committed == nil:
			errs = append(errs, fmt.Errorf("entry %d (group %q %s/%d): no committed offset (what apply wrote)", i, e.Group, e.Topic, e.Partition))
		case seen[key{e.Group, e.Topic, e.Partition}]:
			errs = append(errs, fmt.Errorf("entry %d: group %q %s/%d is listed twice", i, e.Group, e.Topic, e.Partition))
		}
		seen[key{e.Group, e.Topic, e.Partition}] = true
	}
	return errors.Join(errs...)
}

// writeBackup writes b (a *Backup or an *ACLBackup) as JSON to path, which must not exist: to a
// temporary file in the same directory (mode 0600), fsynced, then linked to path (never
// replacing a file there) and the directory fsynced, so that path holds either nothing or the
// whole backup, durably.
func writeBackup(path string, b any) error {
	exists := fmt.Errorf("backup file %s exists: choose another with --backup", path)
	if _, err := os.Lstat(path); err == nil {
		return exists
	}
	f, err := encodeBackup(path, b)
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

// replaceBackup writes b over the backup at path (kreconcile groups --follow, whose backup
// grows with each group): the same temporary file, renamed over path, the directory fsynced.
// path holds the old backup or the new one, whole.
func replaceBackup(path string, b *Backup) error {
	f, err := encodeBackup(path, b)
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

// encodeBackup writes b as indented JSON to a new temporary file beside path (mode 0600),
// for the caller to put in place or discard.
func encodeBackup(path string, b any) (*atomicfile.File, error) {
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

// clusterID returns the cluster ID the brokers of cl report (clustermeta.ID) and refuses a
// cluster that reports none: kreconcile cannot tell it from another cluster.
func clusterID(ctx context.Context, cl *kgo.Client, alias string) (string, error) {
	id, err := clustermeta.ID(ctx, cl, alias)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("%s cluster reports no cluster ID (Kafka before 0.10.1?): kreconcile cannot tell it from another cluster and does not write to it", alias)
	}
	return id, nil
}
