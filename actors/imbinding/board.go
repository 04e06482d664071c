package imbinding

import (
	"time"

	"github.com/thatch-run/thatch/messages"
)

// The thread's line on its chat's board (actors/imboard): every decision
// that changes it releases an IMBoardRow with the new one, which the
// front end hands to the chat's board entity.

// boardRow is the thread's line on its chat's board (actors/imboard);
// ok is false for a thread with no binding.
func (s *State) boardRow() (messages.IMBoardRow, bool) {
	r := messages.IMBoardRow{Thread: s.Key, Name: s.Name(), Agent: s.Info.AgentType, Context: s.Context}
	switch {
	case s.Phase == PhaseUnbound:
		return r, false
	case s.Phase == PhaseEnded && s.Ended != nil:
		r.State = "ended: " + s.Ended.Reason
	case s.Phase == PhaseEnded:
		r.State = "ended"
	case s.Phase == PhaseSetup || s.Phase == PhaseRecovering:
		r.State = messages.BoardSetup
	case s.Asked != nil || s.Prompt != nil:
		r.State = messages.BoardWaiting
	case s.Work != 0:
		r.State = messages.BoardWorking
	default:
		r.State = messages.BoardIdle
	}
	return r, true
}

// boardChanged tells the chat's board of the thread's line when the
// decision changed it; Since is when the new state began.
func (p *plan) boardChanged(before *State) {
	now, ok := p.S.boardRow()
	was, had := before.boardRow()
	switch {
	case !ok && had:
		p.Effect(&messages.IMBoardRow{Thread: p.S.Key}) // unbound: off the board
		return
	case !ok || was == now:
		return
	}
	p.Effect(p.S.sinceNow(now, p.now))
}

// sinceNow is r with the time its state began: the work's start for a
// thread at work, now for any other state (it just changed).
func (s *State) sinceNow(r messages.IMBoardRow, now time.Time) *messages.IMBoardRow {
	r.Since = now.UnixMilli()
	if r.State == messages.BoardWorking {
		r.Since = s.Work
	}
	return &r
}
