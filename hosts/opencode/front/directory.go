package front

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/ocregistry"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence"
)

// Row tables the opencode front end keeps.
const (
	// tableDeletedFamilies notes families whose parent was deleted; the
	// runtime-state sweep forgets their journals once the note is old.
	tableDeletedFamilies = "opencode.deleted_family"
	// tableWatcherDeaths held sessions whose watchers were gone; nothing
	// writes it any more, and the runtime-state sweep ages out what an
	// older thatch left there.
	tableWatcherDeaths = "opencode.watcher_deaths"
)

// Row tables of an older thatch, which kept the registry's records in rows;
// the first start of this one imports them into the registry and deletes
// them.
const (
	legacyParents    = "opencode.parent"
	legacyFamilyHost = "opencode.family_host"
	legacyFamilyDir  = "opencode.family_dir"
)

var registryID = actors.Identity{Kind: ocregistry.KindName, ID: ocregistry.ID}

// registryTimeout bounds one change of the registry (an fsync'd append).
const registryTimeout = 30 * time.Second

// sessionDirectory is the front end's view of the registry entity, which
// owns every child link and every family's host and directory. Reads are
// lookups in the newest state the registry answered with (an immutable
// value); a change is a command to the registry, journaled before its
// answer, which becomes the view when it is newer than the one held.
type sessionDirectory struct {
	state atomic.Pointer[ocregistry.State]
	// request sends a command to the registry and returns its answer.
	request func(ctx context.Context, msg any) (any, error)
}

func newDirectory() *sessionDirectory {
	d := &sessionDirectory{}
	d.state.Store(&ocregistry.State{})
	d.request = func(context.Context, any) (any, error) {
		return nil, fmt.Errorf("front: the registry is not running yet")
	}
	return d
}

// view is the newest state the registry answered with.
func (d *sessionDirectory) view() *ocregistry.State { return d.state.Load() }

// do sends a command to the registry and installs the state it answers
// with, unless a newer one is installed already (answers to concurrent
// commands may arrive in any order).
func (d *sessionDirectory) do(ctx context.Context, msg any) (*ocregistry.State, error) {
	res, err := d.request(ctx, msg)
	if err != nil {
		return nil, err
	}
	s, ok := res.(*ocregistry.State)
	if !ok {
		return nil, fmt.Errorf("front: the registry answered %T", res)
	}
	d.install(s)
	return s, nil
}

// install makes s the view unless a newer state is installed already.
func (d *sessionDirectory) install(s *ocregistry.State) {
	for {
		cur := d.state.Load()
		if cur.Version >= s.Version || d.state.CompareAndSwap(cur, s) {
			return
		}
	}
}

// refresh installs the registry's state as it is now: the view is then at
// least as new as every change the registry made durable before.
func (d *sessionDirectory) refresh(ctx context.Context) error {
	_, err := d.do(ctx, &messages.RegistryRead{})
	return err
}

// load reads the registry's state; the first start after an older thatch
// imports that one's rows into the registry and then deletes them.
func (d *sessionDirectory) load(ctx context.Context, rows *persistence.Rows) error {
	s, err := d.do(ctx, &messages.RegistryRead{})
	if err != nil {
		return fmt.Errorf("front: read the registry: %w", err)
	}
	imp := &messages.RegistryImport{}
	for table, dst := range map[string]*map[string]string{legacyParents: &imp.Parents, legacyFamilyHost: &imp.Hosts, legacyFamilyDir: &imp.Dirs} {
		if err := rows.Scan(table, func(r persistence.Row) error {
			if *dst == nil {
				*dst = map[string]string{}
			}
			(*dst)[r.Key] = string(r.Value)
			return nil
		}); err != nil {
			return fmt.Errorf("front: read the rows of an older registry: %w", err)
		}
	}
	if len(imp.Parents)+len(imp.Hosts)+len(imp.Dirs) == 0 {
		return nil
	}
	if s.Empty() {
		if _, err := d.do(ctx, imp); err != nil {
			return fmt.Errorf("front: import the rows of an older registry: %w", err)
		}
	}
	// Imported now, or by a start that crashed before it deleted them.
	for _, table := range []string{legacyParents, legacyFamilyHost, legacyFamilyDir} {
		var keys []string
		_ = rows.Scan(table, func(r persistence.Row) error { keys = append(keys, r.Key); return nil })
		for _, k := range keys {
			if err := rows.Delete(table, k); err != nil {
				return fmt.Errorf("front: delete the rows of an older registry: %w", err)
			}
		}
	}
	return nil
}

// family returns the top-level session id that session belongs to.
func (d *sessionDirectory) family(session string) string { return d.view().Family(session) }

// hostOf returns the host recorded for a family ("" when none is).
func (d *sessionDirectory) hostOf(family string) string { return d.view().Host(family) }

// directory returns the recorded directory of a family.
func (d *sessionDirectory) directory(family string) string { return d.view().Directory(family) }

// familiesOn lists the families recorded on host.
func (d *sessionDirectory) familiesOn(host string) []string { return d.view().FamiliesOn(host) }

// link durably records that child belongs to parent's family and returns
// that family.
func (d *sessionDirectory) link(ctx context.Context, child, parent string) (string, error) {
	v := d.view()
	fam := v.Family(parent)
	if v.Linked(child) == fam || child == fam {
		return fam, nil // every event of a known child: no command
	}
	s, err := d.do(ctx, &messages.RegistryLink{Child: child, Parent: parent})
	if err != nil {
		return "", err
	}
	return s.Family(parent), nil
}

// seen sends the registry what a host's event taught about a family (see
// FrontEnd.teaches), installs the state it answers with, and reports
// whether it recorded the command's host.
func (d *sessionDirectory) seen(ctx context.Context, c *ocregistry.FamilySeen) (moved bool, err error) {
	res, err := d.request(ctx, c)
	if err != nil {
		return false, err
	}
	a, ok := res.(*ocregistry.Seen)
	if !ok {
		return false, fmt.Errorf("front: the registry answered %T", res)
	}
	d.install(a.State)
	return a.Moved, nil
}

// setDirectory durably records the directory a family's parent runs in.
func (d *sessionDirectory) setDirectory(ctx context.Context, family, dir string) error {
	if dir == "" || d.directory(family) == dir {
		return nil
	}
	_, err := d.do(ctx, &messages.RegistrySetDirectory{Family: family, Directory: dir})
	return err
}

// adoptDirectory records a family's directory when none is recorded yet.
func (d *sessionDirectory) adoptDirectory(ctx context.Context, family, dir string) error {
	if dir == "" || d.directory(family) != "" {
		return nil
	}
	_, err := d.do(ctx, &messages.RegistrySetDirectory{Family: family, Directory: dir, OnlyIfUnset: true})
	return err
}

// dropFamilyRecord drops the host and directory of id, which turned out to
// be no family, keeping every child link (a session linked under id still
// reaches id's real family through id's own link).
func (d *sessionDirectory) dropFamilyRecord(ctx context.Context, id string) error {
	v := d.view()
	if v.Host(id) == "" && v.Directory(id) == "" {
		return nil
	}
	_, err := d.do(ctx, &messages.RegistryDropRecord{ID: id})
	return err
}

// forget drops a family that is gone for good, and its children's links.
func (d *sessionDirectory) forget(ctx context.Context, family string) error {
	_, err := d.do(ctx, &messages.RegistryForget{Family: family})
	return err
}
