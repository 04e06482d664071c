package messages

// Identity names one entity: its kind (an opencode family, a sweeper, an IM
// binding, ...) and its id within that kind. It is stable across restarts,
// so it is what the journal keys an entity's events and snapshots on, and
// what a message is addressed to. It lives here, in the vocabulary every
// other package shares, so that the decision cores can name entities
// without importing the journal.
type Identity struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// String renders the identity as kind/id, the form logs and status show.
func (i Identity) String() string { return i.Kind + "/" + i.ID }
