package testkit

import "testing"

// The two translations agree on syncs written in upstream order and part only on a rewound
// source, where Newest takes the last sync written and Highest the highest upstream offset.
func TestMM2Translate(t *testing.T) {
	inOrder := []Sync{{0, 0}, {10, 12}, {20, 25}}
	rewound := []Sync{{0, 0}, {20, 25}, {10, 40}}
	for _, tc := range []struct {
		name                string
		syncs               []Sync
		g                   int64
		newest, highest     int64
		newestOK, highestOK bool
	}{
		{"before every sync", inOrder[1:], 5, 0, 0, false, false},
		{"at a sync", inOrder, 10, 12, 12, true, true},
		{"past a sync", inOrder, 15, 13, 13, true, true},
		{"past the last sync", inOrder, 30, 26, 26, true, true},
		{"rewound, past both", rewound, 30, 41, 26, true, true},
		{"rewound, between", rewound, 15, 41, 41, true, true},
	} {
		if got, ok := MM2TranslateNewest(tc.syncs, tc.g); got != tc.newest || ok != tc.newestOK {
			t.Errorf("%s: MM2TranslateNewest(%d) = %d, %v; want %d, %v", tc.name, tc.g, got, ok, tc.newest, tc.newestOK)
		}
		if got, ok := MM2TranslateHighest(tc.syncs, tc.g); got != tc.highest || ok != tc.highestOK {
			t.Errorf("%s: MM2TranslateHighest(%d) = %d, %v; want %d, %v", tc.name, tc.g, got, ok, tc.highest, tc.highestOK)
		}
	}
}
