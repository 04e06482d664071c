package imbinding

import (
	"slices"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/messages"
)

// Files sent in the thread (a photo, a document, a voice note) are saved
// in the inbox of the binding's working directory and named to the agent
// by a typed line, "[file: /abs/path] caption". The update is journaled
// first, with the file in State.Waiting; the save is an effect
// (IMSaveFile), asked for once the binding knows its directory (at once
// when bound; after the setup the file started otherwise; again after a
// restart). Every message sent after the file waits behind it in
// Waiting, so that nothing overtakes it: once the file is saved (or
// could not be, and is dropped with a note) the head of Waiting that is
// ready joins Queue, and is typed like any message.

// queue adds the message of e to n, a copy of s: to Queue, or to Waiting
// when it is a file or comes behind one.
func queue(n, s *State, e *messages.IMUpdateSeen) {
	q := Queued{UpdateID: e.UpdateID, Text: e.Text}
	if e.File == nil && len(s.Waiting) == 0 {
		n.Queue = append(slices.Clip(s.Queue), q)
		return
	}
	if e.File != nil {
		f := *e.File
		q.File, q.Caption, q.At, q.Text = &f, e.Caption, e.At, ""
	}
	n.Waiting = append(slices.Clip(s.Waiting), q)
}

// applyFiles applies the file events to n, a copy of s; it reports
// whether ev was one of them.
func applyFiles(n, s *State, ev any) bool {
	e, ok := ev.(*messages.IMFileReady)
	if !ok {
		return false
	}
	i := slices.IndexFunc(s.Waiting, func(q Queued) bool { return q.UpdateID == e.UpdateID && q.File != nil })
	if i < 0 {
		return true
	}
	waiting := slices.Clone(s.Waiting)
	if e.Dropped {
		waiting = slices.Delete(waiting, i, i+1)
	} else {
		waiting[i] = Queued{UpdateID: e.UpdateID, Text: e.Text}
	}
	// What no file holds up any longer joins the queue, in order.
	ready := slices.IndexFunc(waiting, func(q Queued) bool { return q.File != nil })
	if ready < 0 {
		ready = len(waiting)
	}
	n.Queue = append(slices.Clip(s.Queue), waiting[:ready]...)
	n.Waiting = waiting[ready:]
	if len(n.Waiting) == 0 {
		n.Waiting = nil
	}
	return true
}

// saveFiles asks for the saves a decision made due: a file that came
// while the binding knows its directory, and every file waiting when the
// binding just learned it (a setup finished, another directory bound) or
// restarted. old is the state before the decision. A save asked for
// twice writes the same file (its name is made of the update's time),
// and only the first result counts.
func (p *plan) saveFiles(old *State, msg any) {
	s := p.S
	if !s.Bound() || s.Info.Cwd == "" || s.Phase == PhaseEnded {
		return
	}
	_, restarted := msg.(*actors.Recovered)
	all := restarted || !old.Bound() || old.Info.Cwd != s.Info.Cwd
	for _, q := range s.Waiting {
		if q.File == nil {
			continue
		}
		if !all && slices.ContainsFunc(old.Waiting, func(o Queued) bool { return o.UpdateID == q.UpdateID }) {
			continue
		}
		p.Effect(&messages.IMSaveFile{UpdateID: q.UpdateID, At: q.At, Dir: s.Info.Cwd, File: *q.File})
	}
}

// fileSaved types the saved file's line (with its caption, and the
// transcript of a voice note) in its turn, or says why the file was not
// saved and types nothing for it.
func (p *plan) fileSaved(m *messages.IMFileSaved) {
	s := p.S
	i := slices.IndexFunc(s.Waiting, func(q Queued) bool { return q.UpdateID == m.UpdateID && q.File != nil })
	if i < 0 {
		return // a save asked for twice: the first result counted
	}
	q := s.Waiting[i]
	what := fileWhat(q.File)
	switch {
	case m.Err != "" && m.TooLarge:
		p.Event(&messages.IMFileReady{UpdateID: m.UpdateID, Dropped: true})
		p.say(messages.IMOutEntry{Text: "The " + what + " is too large to take (" + m.Err + "): nothing was given to the agent."})
	case m.Err != "":
		p.Event(&messages.IMFileReady{UpdateID: m.UpdateID, Dropped: true})
		p.say(messages.IMOutEntry{Text: "Could not save the " + what + " (" + m.Err + "): nothing was given to the agent."})
	default:
		line := "[file: " + m.Path + "]"
		if q.Caption != "" {
			line += " " + q.Caption
		}
		if m.Transcript != "" {
			line += "\n" + m.Transcript
		}
		p.Event(&messages.IMFileReady{UpdateID: m.UpdateID, Text: line})
		if m.TranscribeErr != "" {
			p.say(messages.IMOutEntry{Text: "The voice note was saved, but not transcribed (" + m.TranscribeErr + "): only its path is typed."})
		}
	}
	// The messages it held up may go now.
	if n := p.S; n.Phase == PhaseBound && !n.Checking && !n.sending() && len(n.Queue) > 0 {
		p.Event(&messages.IMResumed{})
		p.Effect(p.check())
	}
}

// fileWhat names a file for the user: its kind, and its name when it has
// one ("document report.pdf").
func fileWhat(f *messages.IMFile) string {
	what := f.Kind
	switch what {
	case "voice":
		what = "voice note"
	case "":
		what = "file"
	}
	if f.Name != "" {
		what += " " + Clip(f.Name, 60)
	}
	return what
}
