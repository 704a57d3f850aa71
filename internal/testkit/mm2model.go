package testkit

// The model of MirrorMaker 2 3.7.1's checkpoint translation (OffsetSyncStore.translateDownstream)
// that tests compare kmigrate's answers against: from a sync (u, d) with u <= g, a group
// offset g translates to d when u = g, else to d + 1 (MM2 never translates past a sync's
// record). The two functions differ only in which sync they take when the syncs' upstream
// offsets are not in the order they were written (a rewound source).

// Sync is an MM2 offset sync: upstream offset u was copied to downstream offset d.
type Sync struct{ Upstream, Downstream int64 }

// MM2TranslateNewest translates g from the newest sync (the last of syncs, in the order they
// were written) with Upstream <= g; ok is false when there is none.
func MM2TranslateNewest(syncs []Sync, g int64) (d int64, ok bool) {
	for _, s := range syncs {
		if s.Upstream <= g {
			d, ok = from(s, g), true
		}
	}
	return d, ok
}

// MM2TranslateHighest translates g from the sync with the highest Upstream <= g (of two
// with the same upstream, the later); ok is false when there is none.
func MM2TranslateHighest(syncs []Sync, g int64) (d int64, ok bool) {
	var best *Sync
	for i := range syncs {
		if s := &syncs[i]; s.Upstream <= g && (best == nil || s.Upstream >= best.Upstream) {
			best = s
		}
	}
	if best == nil {
		return 0, false
	}
	return from(*best, g), true
}

func from(s Sync, g int64) int64 {
	if s.Upstream == g {
		return s.Downstream
	}
	return s.Downstream + 1
}
