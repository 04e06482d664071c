package front

import (
	"context"
	"path/filepath"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imtranscripts"
	"github.com/thatch-run/thatch/messages"
)

// Which binding holds which agent transcript is the node's transcript
// registry's (actors/imtranscripts): a session search claims the new
// transcript it takes, a binding's IMFollowTranscript makes it the
// binding's, and its IMStopFollowing gives it up. The picker leaves out
// what another thread holds, and a search never takes it.

// transcriptsID is the registry's one entity.
var transcriptsID = actors.Identity{Kind: imtranscripts.KindName, ID: imtranscripts.ID}

// registryTimeout bounds one question to the registry or to a holder.
const registryTimeout = 10 * time.Second

// heldByOthers returns which of paths a binding other than from holds
// (the holder, by path). A holder that follows a path but says it no
// longer does (its IMStopFollowing was lost to a crash) is released, and
// the path is free. When the registry cannot answer, nothing is held:
// the picker offers too much rather than nothing.
func (f *FrontEnd) heldByOthers(ctx context.Context, from string, paths []string) map[string]string {
	clean := make([]string, len(paths))
	back := make(map[string]string, len(paths))
	for i, p := range paths {
		clean[i] = filepath.Clean(p)
		back[clean[i]] = p
	}
	res, err := f.tree.RequestContext(ctx, transcriptsID, &imtranscripts.Holders{Paths: clean}, registryTimeout)
	holders, ok := res.(map[string]imtranscripts.Holder)
	if err != nil || !ok {
		f.log.Warn("the transcript registry did not answer; taking every transcript as free", "error", err)
		return nil
	}
	out := map[string]string{}
	for path, h := range holders {
		if h.Binding == from {
			continue
		}
		if h.Followed && !f.stillFollows(ctx, h.Binding, path) {
			continue
		}
		out[back[path]] = h.Binding
	}
	return out
}

// stillFollows asks binding whether it follows path; one that says not
// gives the path up in the registry. A binding that cannot answer is
// taken to follow it.
func (f *FrontEnd) stillFollows(ctx context.Context, binding, path string) bool {
	res, err := f.tree.RequestContext(ctx, bindingID(binding), &messages.IMFollows{Path: path}, registryTimeout)
	if follows, ok := res.(bool); err != nil || !ok || follows {
		return true
	}
	f.log.Info("a thread held a transcript it no longer follows; releasing it", "thread", binding, "path", path)
	f.releaseTranscript(ctx, binding, path)
	return false
}

// claimTranscript claims the transcript at path for the binding from; it
// reports false when another binding holds it (then from's search goes
// on). A holder that no longer follows the path loses it first.
func (f *FrontEnd) claimTranscript(ctx context.Context, from, path string) bool {
	path = filepath.Clean(path)
	for range 2 {
		res, err := f.tree.RequestContext(ctx, transcriptsID, &imtranscripts.Claim{Path: path, Binding: from}, registryTimeout)
		a, ok := res.(*imtranscripts.Answer)
		if err != nil || !ok {
			f.log.Warn("the transcript registry did not answer a claim; taking the transcript", "thread", from, "path", path, "error", err)
			return true
		}
		if a.OK {
			return true
		}
		if !a.Followed || f.stillFollows(ctx, a.By, path) {
			return false
		}
	}
	return false
}

// holdTranscript records that from follows path (its binding journaled
// so); releaseTranscript that it no longer does.
func (f *FrontEnd) holdTranscript(ctx context.Context, from, path string) {
	res, err := f.tree.RequestContext(ctx, transcriptsID, &imtranscripts.Follow{Path: filepath.Clean(path), Binding: from}, registryTimeout)
	if err != nil {
		f.log.Warn("the transcript registry did not record a follow", "thread", from, "path", path, "error", err)
		return
	}
	if a, ok := res.(*imtranscripts.Answer); ok && !a.OK {
		f.log.Info("a thread follows a transcript another held", "thread", from, "path", path, "held_by", a.By)
	}
}

func (f *FrontEnd) releaseTranscript(ctx context.Context, from, path string) {
	err := f.tree.DeliverContext(ctx, transcriptsID, &imtranscripts.Release{Path: filepath.Clean(path), Binding: from}, registryTimeout)
	if err != nil {
		f.log.Warn("the transcript registry did not record a release", "thread", from, "path", path, "error", err)
	}
}
