package mm2

import "strings"

// lintV4 reports the keys whose meaning depends on the MirrorMaker 2 release: keys only 4.x
// reads (3.7.1 drops them), keys 4.x no longer reads (a filter written with a *.blacklist
// key silently stops filtering there), and emit.offset-syncs.enabled=false in a flow that
// still checkpoints or syncs group offsets, which then do nothing (the connector's own
// documentation says so).
func lintV4(props *Properties, cfg *Config, add addFunc) {
	for _, pr := range props.All() {
		suffix := pr.Key
		if i := strings.Index(suffix, "->"); i >= 0 {
			if j := strings.Index(suffix[i:], "."); j >= 0 {
				suffix = suffix[i+j+1:]
			}
		}
		if what, ok := v4Keys[suffix]; ok {
			add(pr.Line, pr.Key, SeverityInfo, "", "read by MirrorMaker 2 4.x only (%s); MM2 3.7.1 ignores it", what)
		}
		if instead, ok := removedInV4[suffix]; ok {
			sugg, do := "", "remove it"
			if instead != "" {
				sugg = strings.TrimSuffix(pr.Key, suffix) + instead
				if strings.Contains(instead, "=") {
					sugg = instead
				}
				do = "write " + sugg + " instead"
			}
			add(pr.Line, pr.Key, SeverityWarning, sugg, "MirrorMaker 2 4.x no longer reads it (3.7.1 does) and drops it without a word: %s", do)
		}
	}
	for _, f := range cfg.Flows {
		if !f.Enabled {
			continue
		}
		syncs, set, err := f.Bool("emit.offset-syncs.enabled", true)
		if err != nil || !set || syncs {
			continue
		}
		checkpoints, _, _ := f.Bool("emit.checkpoints.enabled", true)
		groups, _, _ := f.Bool("sync.group.offsets.enabled", false)
		if !checkpoints && !groups {
			continue
		}
		key := f.Name() + ".emit.offset-syncs.enabled"
		if props.Line(key) == 0 {
			key = "emit.offset-syncs.enabled"
		}
		add(props.Line(key), key, SeverityWarning, "", "flow %s: with emit.offset-syncs.enabled=false MirrorMaker 2 4.x writes no offset syncs, so its checkpoint connector emits no checkpoint and syncs no group offset although emit.checkpoints.enabled or sync.group.offsets.enabled asks for them", f.Name())
	}
}
