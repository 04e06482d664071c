package front

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imtranscripts"
	"github.com/thatch-run/thatch/actors/kindtest"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// registryTree runs the transcript registry's core as the runtime would,
// and answers IMFollows for the bindings from follows (path by binding).
type registryTree struct {
	frontend.Tree
	t       *testing.T
	mu      sync.Mutex
	s       *imtranscripts.State
	follows map[string]string
}

func (r *registryTree) RequestContext(_ context.Context, to actors.Identity, msg any, _ time.Duration) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if to.Kind != imtranscripts.KindName {
		m := msg.(*messages.IMFollows)
		return r.follows[to.ID] == m.Path, nil
	}
	s, d := kindtest.Step(r.t, imtranscripts.Kind{}, r.s, msg, time.Now())
	r.s = s
	return d.Reply, nil
}

func (r *registryTree) DeliverContext(ctx context.Context, to actors.Identity, msg any, timeout time.Duration) error {
	_, err := r.RequestContext(ctx, to, msg, timeout)
	return err
}

// Two threads' searches take one new transcript: the first claim wins,
// the other's search looks on, and the picker of a third thread leaves
// the transcript out while its holder follows it. A holder whose
// IMStopFollowing a crash lost (it follows another transcript now) loses
// the transcript at the next claim.
func TestASearchTakesNoTranscriptAnotherThreadHolds(t *testing.T) {
	tree := &registryTree{t: t, s: imtranscripts.Kind{}.Initial(imtranscripts.ID), follows: map[string]string{}}
	f := &FrontEnd{cfg: config.Defaults(), tree: tree, log: hclog.NewNullLogger()}
	ctx := context.Background()
	const path = "/h/.claude/projects/p/a.jsonl"
	a, b, c := "tg:1:1", "tg:1:2", "tg:1:3"
	if !f.claimTranscript(ctx, a, path) {
		t.Fatal("the first search could not claim the new transcript")
	}
	if f.claimTranscript(ctx, b, path) {
		t.Fatal("a second search took the transcript the first had claimed")
	}
	f.holdTranscript(ctx, a, path)
	tree.follows[a] = path
	if by := f.heldByOthers(ctx, c, []string{path, "/h/other.jsonl"}); len(by) != 1 || by[path] != a {
		t.Fatalf("held by others: %v, want %s holding %s", by, a, path)
	}
	if by := f.heldByOthers(ctx, a, []string{path}); len(by) != 0 {
		t.Fatalf("a thread's own transcript is held by others: %v", by)
	}
	tree.follows[a] = "/h/.claude/projects/p/next.jsonl" // it moved on, and its release was lost
	if !f.claimTranscript(ctx, b, path) {
		t.Fatal("a transcript its holder no longer follows could not be claimed")
	}
	if by := f.heldByOthers(ctx, c, []string{path}); by[path] != b {
		t.Fatalf("held by others: %v, want %s's claim", by, b)
	}
}
