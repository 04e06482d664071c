package ocfamily

import (
	"cmp"
	"slices"

	"github.com/thatch-run/thatch/messages"
)

// Apply folds one journaled event into s, in place, and returns s. It
// trusts the event: Decide checked everything when it was made, so replay
// needs neither the configuration nor the clock. Unknown events leave s
// unchanged.
func (f *Family) Apply(s *State, ev any) *State {
	if !s.applyBuffers(ev) {
		s.applyLifecycle(ev)
	}
	return s
}

// applyBuffers applies the events of the buffers, the claims and what
// extractions cost and meet; it reports whether ev was one of them.
func (s *State) applyBuffers(ev any) bool {
	switch e := ev.(type) {
	case *messages.FamilyInteractionBuffered:
		entry := Entry{Seq: e.Seq, Interaction: e.Interaction}
		if e.Seq > s.LastSeq {
			s.LastSeq = e.Seq
		}
		if e.SessionID == s.ID {
			s.Dropped += uint64(len(e.Dropped))
			s.DroppedSinceFetch += uint64(len(e.Dropped))
			s.Pending = append(removeSeqs(s.Pending, e.Dropped), entry)
		} else if c := s.Children[e.SessionID]; c != nil {
			c.Buffer = append(removeSeqs(c.Buffer, e.Dropped), entry)
		}
	case *messages.FamilyPayloadClaimed:
		if c := s.Children[e.FetcherID]; c != nil {
			c.Fetched = true
			c.ActiveAt = e.At
		}
		if len(e.Seqs) > 0 {
			// The fetcher was told what the buffer limit dropped.
			s.DroppedSinceFetch = 0
			s.closeIncidents(IncidentBufferDrop)
		}
		if len(e.Seqs) == 0 {
			break
		}
		claim := s.claim(e.FetcherID)
		keep := s.Pending[:0:0]
		for _, en := range s.Pending {
			if slices.Contains(e.Seqs, en.Seq) {
				en.AcceptedAt = e.At
				claim.Entries = append(claim.Entries, en)
			} else {
				keep = append(keep, en)
			}
		}
		s.Pending = nilIfEmpty(keep)
	case *messages.FamilyClaimCompleted:
		s.takeAccepted(e.Seqs)
		if c := s.Children[e.FetcherID]; c != nil && c.Kind == ChildExtraction {
			s.closeIncidents(failureKinds...) // an extraction went through
		}
	case *IncidentRecorded:
		s.applyIncident(e)
	case *PayloadMeasured:
		s.PayloadBytes += e.Bytes
		if c := s.Children[e.FetcherID]; c != nil {
			c.PayloadBytes += e.Bytes
		}
	case *messages.FamilyEntriesRequeued:
		back := s.takeAccepted(e.Seqs)
		for i := range back {
			back[i].AcceptedAt = timeZero
		}
		s.Pending = mergeBySeq(s.Pending, back)
	case *messages.FamilyMemoryCounted:
		if c := s.Children[e.ChildID]; c != nil {
			if !e.At.IsZero() {
				c.ActiveAt = e.At
			}
			switch e.Op {
			case messages.MemoryCreated:
				c.Metrics.New++
			case messages.MemoryUpdated:
				c.Metrics.Updated++
			case messages.MemoryDeleted:
				c.Metrics.Deleted++
			}
		}
	default:
		return false
	}
	return true
}

// applyLifecycle applies the events of the family's sessions, its
// children, its extractions and wrap-ups.
func (s *State) applyLifecycle(ev any) {
	switch e := ev.(type) {
	case *messages.FamilyHostSeen:
		// An older thatch's record of the host, which the registry owns:
		// nothing to replay.
	case *messages.FamilyParentCreated:
		s.Created = true // an older thatch's Directory is the registry's
	case *messages.FamilyChildRecorded:
		if _, ok := s.Children[e.ChildID]; !ok {
			kind := ChildTask
			if e.Extraction {
				kind = ChildExtraction
			}
			s.child(e.ChildID).Kind = kind
			s.Children[e.ChildID].Title = e.Title
		}
	case *messages.FamilyExtractionStarted:
		s.Extracting = true
		s.ExtractionSince = e.At
		s.ExtractionChild = ""
	case *messages.FamilyExtractionChildAttached:
		s.child(e.ChildID).Kind = ChildExtraction
		s.ExtractionChild = e.ChildID
		if !e.At.IsZero() {
			s.ExtractionSince = e.At
		}
	case *messages.FamilyExtractionStopped:
		s.stopExtraction()
	case *messages.FamilyChildCleared:
		delete(s.Children, e.ChildID)
		if len(s.Children) == 0 {
			s.Children = nil
		}
		if s.ExtractionChild == e.ChildID {
			s.stopExtraction()
		}
	case *messages.FamilyCompactionStarted:
		s.Compacting = true
	case *messages.FamilyCompactionFinished:
		s.Compacting = false
	case *messages.FamilyWrapUpArmed:
		s.WrapUp = &WrapUp{Kind: e.Kind, Token: e.Token}
	case *messages.FamilyWrapUpCheckStarted:
		if s.WrapUp != nil {
			s.WrapUp.Checking = true
			s.WrapUp.CheckingSince = e.At
			s.Checks++
		}
	case *messages.FamilyWrapUpCheckFinished:
		if s.WrapUp != nil {
			s.WrapUp.Checking = false
			s.WrapUp.CheckingSince = timeZero
		}
	case *messages.FamilyWrapUpDisarmed:
		s.WrapUp = nil
	case *messages.FamilyExitGreenlit:
		s.ExitingSince = e.At
	case *messages.FamilyExitFinished:
		s.ExitingSince = timeZero
	case *messages.FamilyFinishScheduled:
		if c := s.Children[e.ChildID]; c != nil {
			c.Finishing = true
		}
	case *messages.FamilyFinishCancelled:
		if c := s.Children[e.ChildID]; c != nil {
			c.Finishing = false
		}
	case *messages.FamilyParentDeleted:
		*s = State{ID: s.ID, Created: s.Created, Deleted: true, LastSeq: s.LastSeq}
	case *messages.FamilyDeletionNoted:
		s.DeletionNoted = true
	}
}

func (s *State) stopExtraction() {
	s.Extracting = false
	s.ExtractionSince = timeZero
	s.ExtractionChild = ""
}

// child returns the record of id, creating a task record if there is none.
func (s *State) child(id string) *Child {
	if s.Children == nil {
		s.Children = map[string]*Child{}
	}
	c := s.Children[id]
	if c == nil {
		c = &Child{ID: id, Kind: ChildTask}
		s.Children[id] = c
	}
	return c
}

func (s *State) claim(fetcher string) *Claim {
	if s.Claims == nil {
		s.Claims = map[string]*Claim{}
	}
	c := s.Claims[fetcher]
	if c == nil {
		c = &Claim{}
		s.Claims[fetcher] = c
	}
	return c
}

// takeAccepted removes the listed entries from whatever claims hold them
// and returns them ordered by entry number. Emptied claims disappear.
func (s *State) takeAccepted(seqs []uint64) []Entry {
	var out []Entry
	for id, c := range s.Claims {
		keep := c.Entries[:0:0]
		for _, e := range c.Entries {
			if slices.Contains(seqs, e.Seq) {
				out = append(out, e)
			} else {
				keep = append(keep, e)
			}
		}
		if len(keep) == 0 {
			delete(s.Claims, id)
		} else {
			c.Entries = keep
		}
	}
	if len(s.Claims) == 0 {
		s.Claims = nil
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// mergeBySeq merges two lists ordered by entry number.
func mergeBySeq(a, b []Entry) []Entry {
	if len(b) == 0 {
		return a
	}
	out := make([]Entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].Seq < b[j].Seq {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

func removeSeqs(list []Entry, seqs []uint64) []Entry {
	if len(seqs) == 0 {
		return list
	}
	if len(seqs) <= len(list) && slices.EqualFunc(list[:len(seqs)], seqs, func(e Entry, s uint64) bool { return e.Seq == s }) {
		return list[len(seqs):] // the usual overflow: the oldest entries
	}
	keep := list[:0:0]
	for _, e := range list {
		if !slices.Contains(seqs, e.Seq) {
			keep = append(keep, e)
		}
	}
	return keep
}

func nilIfEmpty(list []Entry) []Entry {
	if len(list) == 0 {
		return nil
	}
	return list
}
