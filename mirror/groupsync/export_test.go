package groupsync

// Denied exposes denied.
var Denied = denied
