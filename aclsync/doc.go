// Package aclsync copies a cluster's ACLs to the cluster it is migrated to (kreconcile acls):
// it plans the target's ACLs from the source's, creates the missing ones after a backup, and
// undoes exactly that from the backup (kreconcile rollback of an ACL backup).
//
// The types to know:
//
//   - Plan reads every ACL of both clusters (it writes nothing) and returns a Result: the
//     source's ACLs with principals mapped (Config.Rules, --map-principal; first rule that
//     matches the whole principal wins) and topic names through the flow's replication
//     policy, each planned as missing, present, target-only or skipped (with the reason)
//     against the target's. Resource type, pattern type, operation, permission and host are
//     never changed; ACLs of User:* are left out unless Config.IncludeWildcards. Each item
//     says what MirrorMaker 2 3.7.1's own ACL sync would do instead (MM2, MM2Differs). The
//     Result records both cluster IDs and refuses a source and a target that are one cluster;
//     its JSON form is part of kreconcile's interface.
//   - Apply writes on the plan's target only (another cluster ID: refused, nothing written):
//     it creates the missing ACLs and, with Config.DeleteExtra, deletes the target-only ones,
//     after re-reading the target (a write made since the plan is left alone) and writing a
//     Backup of kind "acls" that names both clusters and every ACL it is about to create and
//     delete (internal/backupfile: whole or not at all, never over an existing file). With
//     nothing to write it writes no backup. Each item then says what was done (Action) or why
//     not (Err).
//   - Rollback undoes an apply from its backup on the backup's target only: it deletes exactly
//     the ACLs the apply created (by filters naming every field, so that an ACL added since is
//     kept) and creates again those it deleted; an ACL already as the rollback would leave it
//     is left alone. ReadBackup refuses an invalid backup: another kind or version, bytes after
//     the JSON value, a missing cluster ID, an incomplete ACL or one listed twice.
//
// Every read that decides or verifies an ACL write asks every broker of the cluster and
// waits, within ReadTimeout (30 s by default), until they give the same answer, and the check
// after a write until every broker shows it (read.go, internal/agree): brokers apply ACL
// changes one by one after the controller. Brokers that still differ at the bound stop the
// command, named: before the writes with nothing written, after them with the backup complete.
//
// It imports the base layer only (mm2, internal/agree, internal/backupfile), never reconcile:
// ACLs and consumer group offsets share the backup file helpers and nothing else.
//
// Tests: two kfake clusters, one with a broker that answers from an older copy of the ACLs
// (stale_test.go); integration/acls_test.go on real brokers with MirrorMaker 2.
package aclsync
