package messages

// This file holds the messages and events of the opencode registry: the one
// entity that owns which family every child session belongs to, and which
// host and directory every family is recorded on. The router reads an
// immutable copy of its state; every change is one of these commands,
// journaled as one of these events before it is seen.

// Commands to the registry. Each is answered with the registry's state
// after it was handled (actors/ocregistry.State), once that is durable.

// RegistryRead asks for the registry's state; it changes nothing.
type RegistryRead struct{}

// RegistryLink records that Child belongs to the family of Parent.
type RegistryLink struct {
	Child  string `json:"child"`
	Parent string `json:"parent"`
}

// RegistrySetDirectory records the directory a family's parent runs in.
// With OnlyIfUnset, a recorded directory is kept.
type RegistrySetDirectory struct {
	Family      string `json:"family"`
	Directory   string `json:"directory"`
	OnlyIfUnset bool   `json:"onlyIfUnset,omitempty"`
}

// RegistrySetHost records the host a family lives on if the recorded one
// is still IfCurrent ("" for none): a compare-and-set, so that a decision
// made on a read is not applied over a change made since.
type RegistrySetHost struct {
	Family    string `json:"family"`
	Host      string `json:"host"`
	IfCurrent string `json:"ifCurrent"`
}

// RegistryDropRecord drops the host and directory of ID, which turned out
// to be no family, keeping every child link.
type RegistryDropRecord struct {
	ID string `json:"id"`
}

// RegistryForget drops a family that is gone for good, with its children's
// links.
type RegistryForget struct {
	Family string `json:"family"`
}

// RegistryImport takes over the records of an older thatch, which kept
// them in rows; it is applied only to an empty registry.
type RegistryImport struct {
	Parents map[string]string `json:"parents,omitempty"`
	Hosts   map[string]string `json:"hosts,omitempty"`
	Dirs    map[string]string `json:"dirs,omitempty"`
}

// Events of the registry.

// RegistryChildLinked records Child as a member of Family.
type RegistryChildLinked struct {
	Child  string `json:"child"`
	Family string `json:"family"`
}

// RegistryHostSet records the host of Family.
type RegistryHostSet struct {
	Family string `json:"family"`
	Host   string `json:"host"`
}

// RegistryDirectorySet records the directory of Family.
type RegistryDirectorySet struct {
	Family    string `json:"family"`
	Directory string `json:"directory"`
}

// RegistryRecordDropped drops the host and directory of ID.
type RegistryRecordDropped struct {
	ID string `json:"id"`
}

// RegistryFamilyForgotten drops Family, its host, directory and children.
type RegistryFamilyForgotten struct {
	Family string `json:"family"`
}

// RegistryImported holds the records taken over from rows.
type RegistryImported struct {
	Parents map[string]string `json:"parents,omitempty"`
	Hosts   map[string]string `json:"hosts,omitempty"`
	Dirs    map[string]string `json:"dirs,omitempty"`
}

func init() {
	Register[RegistryChildLinked]("opencode.registry.child_linked", 1)
	Register[RegistryHostSet]("opencode.registry.host_set", 1)
	Register[RegistryDirectorySet]("opencode.registry.directory_set", 1)
	Register[RegistryRecordDropped]("opencode.registry.record_dropped", 1)
	Register[RegistryFamilyForgotten]("opencode.registry.family_forgotten", 1)
	Register[RegistryImported]("opencode.registry.imported", 1)
}
