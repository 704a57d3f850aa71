package mirror

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestCommitPolicyDecides: the policy's decisions for the loads that matter, as a pure
// function of the time and the bucket's load.
func TestCommitPolicyDecides(t *testing.T) {
	p := newCommitPolicy(time.Second) // pause 20ms, duty 9, 200 markers a second
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	at := func(n int) time.Time { return t0.Add(ms(n)) }
	long := at(-10_000) // a last commit long ago
	for _, c := range []struct {
		name   string
		now    time.Time
		load   bucketLoad
		commit bool
		reason string
		next   time.Time
	}{
		{name: "nothing to commit", now: at(500), load: bucketLoad{lastEnd: long}},
		{name: "a light flow that paused commits at once",
			now:    at(25),
			load:   bucketLoad{pending: 3, touched: 1, oldest: t0, newest: t0, lastEnd: long, cost: ms(5)},
			commit: true, reason: reasonPause},
		{name: "records still arriving: wait for the pause",
			now:  at(10),
			load: bucketLoad{pending: 3, touched: 1, oldest: t0, newest: at(5), lastEnd: long, cost: ms(5)},
			next: at(25)},
		{name: "no new record but records in flight: a flow the target holds back, not a pause",
			now:  at(25),
			load: bucketLoad{pending: 9000, inflight: 4000, touched: 2, oldest: t0, newest: t0, lastEnd: long, cost: ms(5)},
			next: at(45)},
		{name: "no new record, but the last fetch left records on the source: a burst, not a pause",
			now:  at(25),
			load: bucketLoad{pending: 9000, touched: 2, oldest: t0, newest: t0, lastEnd: long, cost: ms(5), behind: at(10)},
			next: at(45)},
		{name: "the source caught up a pause ago: the flow paused",
			now:    at(40),
			load:   bucketLoad{pending: 9000, touched: 2, oldest: t0, newest: t0, lastEnd: long, cost: ms(5), behind: at(15)},
			commit: true, reason: reasonPause},
		{name: "a bursty flow commits at the bound",
			now:    at(995),
			load:   bucketLoad{pending: 90_000, touched: 2, oldest: t0, newest: at(980), lastEnd: long, cost: ms(5), behind: at(985)},
			commit: true, reason: reasonBound},
		{name: "a flow the target holds back commits at the bound",
			now:    at(995),
			load:   bucketLoad{pending: 9000, inflight: 4000, touched: 2, oldest: t0, newest: at(900), lastEnd: long, cost: ms(5)},
			commit: true, reason: reasonBound},
		{name: "asked again at the bound at the latest",
			now:  at(990),
			load: bucketLoad{pending: 9000, inflight: 4000, touched: 2, oldest: t0, newest: at(900), lastEnd: long, cost: ms(5)},
			next: at(995)},
		{name: "a flow that never pauses commits at the bound, less what a commit takes",
			now:    at(950),
			load:   bucketLoad{pending: 90_000, touched: 2, oldest: t0, newest: at(949), lastEnd: long, cost: ms(50)},
			commit: true, reason: reasonBound},
		{name: "just before the bound: asked again at it",
			now:  at(949),
			load: bucketLoad{pending: 90_000, touched: 2, oldest: t0, newest: at(948), lastEnd: long, cost: ms(50)},
			next: at(950)},
		{name: "many partitions touched: markers wait, up to the bound",
			now:  at(30),
			load: bucketLoad{pending: 400, touched: 400, oldest: t0, newest: t0, lastEnd: at(-100), cost: ms(10)},
			next: at(990)},
		{name: "many partitions touched, at the bound",
			now:    at(990),
			load:   bucketLoad{pending: 400, touched: 400, oldest: t0, newest: t0, lastEnd: at(-100), cost: ms(10)},
			commit: true, reason: reasonBound},
		{name: "a few partitions touched: their markers' share of the time allows it",
			now:    at(30),
			load:   bucketLoad{pending: 4, touched: 4, oldest: t0, newest: t0, lastEnd: at(-100), cost: ms(5)},
			commit: true, reason: reasonPause},
		{name: "commits hold the bucket at most a tenth of the time",
			now:  at(50),
			load: bucketLoad{pending: 5, touched: 1, oldest: t0, newest: t0, lastEnd: at(-100), cost: ms(40)},
			next: at(260)},
		{name: "at most ten commits a bound, so that the map window covers minutes",
			now:  at(30),
			load: bucketLoad{pending: 1, touched: 1, oldest: t0, newest: t0, lastEnd: at(-50), cost: ms(1)},
			next: at(50)},
		{name: "map records without records: due a pause after they were found",
			now:    at(30),
			load:   bucketLoad{dirty: true, since: t0, lastEnd: long, cost: ms(5)},
			commit: true, reason: reasonPause},
		{name: "commits slower than the bound: every record commits at once",
			now:    at(1),
			load:   bucketLoad{pending: 1, touched: 1, oldest: t0, newest: t0, lastEnd: at(-1), cost: 2 * time.Second},
			commit: true, reason: reasonBound},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := p.decide(c.now, c.load)
			if d.commit != c.commit || d.reason != c.reason || !d.next.Equal(c.next) {
				t.Fatalf("decide = {commit %v, reason %q, next %v}, want {commit %v, reason %q, next %v}",
					d.commit, d.reason, d.next.Sub(t0), c.commit, c.reason, c.next.Sub(t0))
			}
		})
	}
}

// TestCommitPolicyKeepsTheBound: whatever the load, a bucket with records commits once its
// oldest record's wait plus what a commit takes reaches the bound, and is never told to wait
// past that.
func TestCommitPolicyKeepsTheBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1_700_000_000, 0)
	for range 100_000 {
		bound := time.Duration(1+r.IntN(5000)) * time.Millisecond
		p := newCommitPolicy(bound)
		ms := func(n int) time.Duration { return time.Duration(r.IntN(n+1)) * time.Millisecond }
		oldest := t0.Add(-ms(6000))
		l := bucketLoad{pending: 1 + r.IntN(100_000), inflight: r.IntN(3) * r.IntN(1000), touched: r.IntN(2000), oldest: oldest,
			newest: oldest.Add(ms(6000)), lastEnd: oldest.Add(-ms(3000)), cost: ms(200), behind: t0.Add(-ms(100))}
		if l.newest.After(t0) {
			l.newest = t0
		}
		deadline := l.oldest.Add(bound - l.cost)
		d := p.decide(t0, l)
		switch {
		case !t0.Before(deadline) && !d.commit:
			t.Fatalf("bound %s, load %+v: no commit at the deadline", bound, l)
		case !d.commit && d.next.After(deadline):
			t.Fatalf("bound %s, load %+v: asked again at %v, after the deadline %v", bound, l, d.next, deadline)
		case !d.commit && !d.next.After(t0):
			t.Fatalf("bound %s, load %+v: asked again at %v, not after now", bound, l, d.next)
		}
	}
}
