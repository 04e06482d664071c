package ocfamily

import (
	"slices"
	"sort"
	"time"

	"github.com/thatch-run/thatch/messages"
)

func init() {
	messages.Register[State]("session.state", 1)
}

// ChildKind tells extraction children from task sub-agents.
type ChildKind string

const (
	// ChildExtraction is a child thatch created (title thatch-extraction) to
	// extract facts; it is deleted once it goes idle.
	ChildExtraction ChildKind = "extraction"
	// ChildTask is any other child: a task sub-agent. It is never deleted
	// by thatch, because the task tool still reads its output.
	ChildTask ChildKind = "task"
)

var timeZero time.Time

// ExtractionTitle is the title of the extraction children thatch creates.
const ExtractionTitle = "thatch-extraction"

// Entry is one buffered interaction with its family-unique number.
type Entry struct {
	Seq         uint64               `json:"seq"`
	Interaction messages.Interaction `json:"interaction"`
	// AcceptedAt is when a fetcher claimed the entry; zero while pending.
	// The stale window is measured from it.
	AcceptedAt time.Time `json:"acceptedAt,omitzero"`
}

// Claim is what one fetcher received and has not completed, oldest first.
type Claim struct {
	Entries []Entry `json:"entries,omitempty"`
}

// Metrics counts a child's memory writes for its toast.
type Metrics struct {
	New     int `json:"new,omitempty"`
	Updated int `json:"updated,omitempty"`
	Deleted int `json:"deleted,omitempty"`
}

func (m Metrics) zero() bool { return m == Metrics{} }

// Child is the record of one child session.
type Child struct {
	ID    string    `json:"id"`
	Kind  ChildKind `json:"kind"`
	Title string    `json:"title,omitempty"`
	// Fetched is true once the child called the payload tool, even if it
	// received nothing. A child that never fetched falls back to the
	// parent's whole accepted set on done-ack, error and deletion.
	Fetched bool `json:"fetched,omitempty"`
	// Buffer is the child's own interactions. They are never extracted;
	// they are dropped with the child.
	Buffer  []Entry `json:"buffer,omitempty"`
	Metrics Metrics `json:"metrics,omitzero"`
	// ActiveAt is when the child last fetched or wrote a memory: a child
	// doing either is not hung.
	ActiveAt time.Time `json:"activeAt,omitzero"`
	// Finishing is true while a finish timer (set after a reconnect found
	// the child idle) is pending.
	Finishing bool `json:"finishing,omitempty"`
	// PayloadBytes is the size of the payloads the child fetched.
	PayloadBytes int64 `json:"payloadBytes,omitempty"`
}

// WrapUp kinds and their tokens.
const (
	WrapUpCompact = "compact"
	WrapUpExit    = "exit"

	TokenCompact = "THATCH_COMPACT_READY"
	TokenExit    = "THATCH_EXIT_READY"
)

// WrapUp is an armed /thatch/compact or /thatch/exit.
type WrapUp struct {
	Kind  string `json:"kind"`
	Token string `json:"token"`
	// Checking is true while the FetchMessages of an idle's check is in
	// flight; that idle's handling resumes on MessagesFetched.
	Checking bool `json:"checking,omitempty"`
	// CheckingSince is when the running check started (zero if unknown).
	CheckingSince time.Time `json:"checkingSince,omitzero"`
}

// State is everything a family knows. It is journaled as events and
// snapshotted whole; Apply is its only writer.
type State struct {
	// ID is the parent (top-level) session id. The host and directory the
	// family lives on are the registry's (actors/ocregistry), not the
	// family's: a family journaled by an older thatch carries them (its
	// FamilyHostSeen events, a "host" and "directory" in its snapshot),
	// and they are ignored on replay.
	ID string `json:"id"`
	// Created is true once the parent's SessionCreated was handled (the
	// start reminder went out).
	Created bool `json:"created,omitempty"`
	// Deleted makes the state a tombstone: the parent is gone and the
	// family ignores everything (tool calls get nothing) but its
	// rehydration and the answer to its sweep note.
	Deleted bool `json:"deleted,omitempty"`
	// DeletionNoted is set once the tombstone's note for the sweep that
	// forgets it is stored; until then the tombstone is rehydrated on
	// start to ask for it again.
	DeletionNoted bool `json:"deletionNoted,omitempty"`
	// LastSeq is the highest entry number handed out.
	LastSeq uint64 `json:"lastSeq,omitempty"`
	// Pending is the parent's queue, ordered by entry number, so entries
	// handed back go ahead of newer ones.
	Pending  []Entry           `json:"pending,omitempty"`
	Claims   map[string]*Claim `json:"claims,omitempty"`
	Children map[string]*Child `json:"children,omitempty"`
	// Extracting is set from the moment a CreateChildSession is decided
	// until the extraction ends; ExtractionChild is empty until the child
	// exists.
	// ExtractionSince is when the extraction was asked for, then when its
	// child was attached: its stale window runs from there.
	Extracting      bool      `json:"extracting,omitempty"`
	ExtractionSince time.Time `json:"extractionSince,omitzero"`
	ExtractionChild string    `json:"extractionChild,omitempty"`
	Compacting      bool      `json:"compacting,omitempty"`
	WrapUp          *WrapUp   `json:"wrapUp,omitempty"`
	// Checks counts the wrap-up checks ever started; the running one is
	// number Checks.
	Checks uint64 `json:"checks,omitempty"`
	// ExitingSince is when /thatch/exit was greenlit, until its close was
	// issued. A close that did not go out is issued again when the host
	// reconnects within ExitRetryWindow of it.
	ExitingSince time.Time `json:"exitingSince,omitzero"`
	// Dropped counts the parent's interactions the buffer limit dropped,
	// ever; DroppedSinceFetch those dropped since the last payload fetch,
	// which the next extractor is told about.
	Dropped           uint64 `json:"dropped,omitempty"`
	DroppedSinceFetch uint64 `json:"droppedSinceFetch,omitempty"`
	// PayloadBytes is the size of every payload fetched from the family.
	PayloadBytes int64 `json:"payloadBytes,omitempty"`
	// Incidents are the last few extraction incidents, oldest first.
	Incidents []Incident `json:"incidents,omitempty"`
	// OpenIncidents holds the kinds of incidents shown and not yet closed:
	// a repeat of one is not shown again.
	OpenIncidents map[string]bool `json:"openIncidents,omitempty"`
}

// Clone returns a deep copy of s. Interactions share their immutable
// strings and argument bytes.
func (s *State) Clone() *State {
	c := *s
	c.Pending = slices.Clone(s.Pending)
	c.Incidents = slices.Clone(s.Incidents)
	if s.OpenIncidents != nil {
		c.OpenIncidents = make(map[string]bool, len(s.OpenIncidents))
		for k, v := range s.OpenIncidents {
			c.OpenIncidents[k] = v
		}
	}
	if s.Claims != nil {
		c.Claims = make(map[string]*Claim, len(s.Claims))
		for k, v := range s.Claims {
			c.Claims[k] = &Claim{Entries: slices.Clone(v.Entries)}
		}
	}
	if s.Children != nil {
		c.Children = make(map[string]*Child, len(s.Children))
		for k, v := range s.Children {
			ch := *v
			ch.Buffer = slices.Clone(v.Buffer)
			c.Children[k] = &ch
		}
	}
	if s.WrapUp != nil {
		w := *s.WrapUp
		c.WrapUp = &w
	}
	return &c
}

// claimLen is how many entries fetcher holds.
func (s *State) claimLen(fetcher string) int {
	if c := s.Claims[fetcher]; c != nil {
		return len(c.Entries)
	}
	return 0
}

// claimSeqs lists fetcher's claimed entry numbers in order.
func (s *State) claimSeqs(fetcher string) []uint64 {
	c := s.Claims[fetcher]
	if c == nil {
		return nil
	}
	out := make([]uint64, 0, len(c.Entries))
	for _, e := range c.Entries {
		out = append(out, e.Seq)
	}
	return out
}

// acceptedSeqs lists every accepted entry number, ascending.
func (s *State) acceptedSeqs() []uint64 {
	var out []uint64
	for _, c := range s.Claims {
		for _, e := range c.Entries {
			out = append(out, e.Seq)
		}
	}
	slices.Sort(out)
	return out
}

// finishing reports whether any child waits for its finish timer.
func (s *State) finishing() bool {
	for _, c := range s.Children {
		if c.Finishing {
			return true
		}
	}
	return false
}

// StatusView is what `thatch status --json` shows of a family.
type StatusView struct {
	SessionID string `json:"sessionID"`
	// Host is the opencode server the family's effects go to. The family
	// does not know it: the front end fills it in from the registry.
	Host     string `json:"host,omitempty"`
	Deleted  bool   `json:"deleted,omitempty"`
	Pending  int    `json:"pending"`
	Accepted int    `json:"accepted"`
	// Claims maps each fetcher to how many entries it holds.
	Claims          map[string]int `json:"claims,omitempty"`
	Extracting      bool           `json:"extracting"`
	ExtractionChild string         `json:"extractionChild,omitempty"`
	Compacting      bool           `json:"compacting"`
	Children        []ChildView    `json:"children,omitempty"`
	WrapUp          *WrapUpView    `json:"wrapUp,omitempty"`
	// ExitingSince is set while a greenlit /thatch/exit waits for its close
	// to be issued.
	ExitingSince *time.Time `json:"exitingSince,omitempty"`
	// Dropped counts the interactions the buffer limit dropped, ever.
	Dropped uint64 `json:"dropped,omitempty"`
	// PayloadBytes is the size of every payload fetched, and
	// PayloadTokens its estimate in tokens (bytes/4).
	PayloadBytes  int64 `json:"payloadBytes,omitempty"`
	PayloadTokens int64 `json:"payloadTokens,omitempty"`
	// Incidents are the last few extraction incidents, oldest first.
	Incidents []Incident `json:"incidents,omitempty"`
}

// ChildView is one child in a StatusView.
type ChildView struct {
	SessionID string    `json:"sessionID"`
	Kind      ChildKind `json:"kind"`
	Claimed   int       `json:"claimed"`
	Buffered  int       `json:"buffered"`
	Finishing bool      `json:"finishing,omitempty"`
	// PayloadTokens estimates the tokens of what the child fetched
	// (bytes/4).
	PayloadTokens int64 `json:"payloadTokens,omitempty"`
}

// WrapUpView is the armed wrap-up in a StatusView.
type WrapUpView struct {
	Kind     string `json:"kind"`
	Token    string `json:"token"`
	Checking bool   `json:"checking,omitempty"`
}

// Status summarises s for a person: counts rather than contents.
func (s *State) Status() StatusView {
	v := StatusView{
		SessionID:       s.ID,
		Deleted:         s.Deleted,
		Pending:         len(s.Pending),
		Extracting:      s.Extracting,
		ExtractionChild: s.ExtractionChild,
		Compacting:      s.Compacting,
		Dropped:         s.Dropped,
		PayloadBytes:    s.PayloadBytes,
		PayloadTokens:   EstimateTokens(s.PayloadBytes),
		Incidents:       slices.Clone(s.Incidents),
	}
	for id, c := range s.Claims {
		if v.Claims == nil {
			v.Claims = map[string]int{}
		}
		v.Claims[id] = len(c.Entries)
		v.Accepted += len(c.Entries)
	}
	for _, c := range s.Children {
		v.Children = append(v.Children, ChildView{
			SessionID: c.ID,
			Kind:      c.Kind,
			Claimed:   s.claimLen(c.ID),
			Buffered:  len(c.Buffer),
			Finishing: c.Finishing,

			PayloadTokens: EstimateTokens(c.PayloadBytes),
		})
	}
	sort.Slice(v.Children, func(i, j int) bool { return v.Children[i].SessionID < v.Children[j].SessionID })
	if s.WrapUp != nil {
		v.WrapUp = &WrapUpView{Kind: s.WrapUp.Kind, Token: s.WrapUp.Token, Checking: s.WrapUp.Checking}
	}
	if !s.ExitingSince.IsZero() {
		at := s.ExitingSince
		v.ExitingSince = &at
	}
	return v
}
