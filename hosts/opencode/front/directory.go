package front

import (
	"fmt"
	"sync"

	"github.com/thatch-run/thatch/persistence"
)

// Row tables the opencode front end keeps.
const (
	// tableParents maps a child session id to its family (top-level) id.
	tableParents = "opencode.parent"
	// tableFamilyHost maps a family id to the host name it lives on, so a
	// reconcile knows which families a host should list.
	tableFamilyHost = "opencode.family_host"
	// tableFamilyDir maps a family id to its parent session's directory.
	tableFamilyDir = "opencode.family_dir"
	// tableDeletedFamilies notes families whose parent was deleted; the
	// runtime-state sweep forgets their journals once the note is old.
	tableDeletedFamilies = "opencode.deleted_family"
	// tableWatcherDeaths records sessions whose watchers are gone.
	tableWatcherDeaths = "opencode.watcher_deaths"
)

// sessionDirectory is the durable index from child sessions to their
// family, with an in-memory copy for routing. It is a derived fact: the
// family entity owns its children; this only tells the router where a
// child's family lives.
type sessionDirectory struct {
	rows *persistence.Rows

	// wmu serializes the writers: each one checks, writes its rows and
	// updates the maps as one step, so that the rows and the maps agree
	// and no check is stale by the time its write lands.
	wmu sync.Mutex
	// mu guards the maps for readers.
	mu      sync.RWMutex
	parents map[string]string
	hosts   map[string]string
	dirs    map[string]string
}

func loadDirectory(rows *persistence.Rows) (*sessionDirectory, error) {
	d := &sessionDirectory{rows: rows, parents: map[string]string{}, hosts: map[string]string{}, dirs: map[string]string{}}
	if err := rows.Scan(tableParents, func(r persistence.Row) error {
		d.parents[r.Key] = string(r.Value)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("thatch: load session directory: %w", err)
	}
	for table, m := range map[string]map[string]string{tableFamilyHost: d.hosts, tableFamilyDir: d.dirs} {
		if err := rows.Scan(table, func(r persistence.Row) error {
			m[r.Key] = string(r.Value)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("thatch: load session directory: %w", err)
		}
	}
	return d, nil
}

// family returns the top-level session id that session belongs to.
func (d *sessionDirectory) family(session string) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for i := 0; i < 64; i++ { // nested sub-agents; the bound guards a cycle
		p, ok := d.parents[session]
		if !ok {
			return session
		}
		session = p
	}
	return session
}

// link durably records that child belongs to parent's family and returns
// that family.
func (d *sessionDirectory) link(child, parent string) (string, error) {
	if fam, ok := d.linked(child, parent); ok {
		return fam, nil // every event of a known child: no writer lock
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	fam, ok := d.linked(child, parent)
	if ok {
		return fam, nil
	}
	if err := d.rows.Put(tableParents, child, []byte(fam)); err != nil {
		return "", err
	}
	d.mu.Lock()
	d.parents[child] = fam
	d.mu.Unlock()
	return fam, nil
}

// linked returns parent's family and whether child is linked to it.
func (d *sessionDirectory) linked(child, parent string) (string, bool) {
	fam := d.family(parent)
	d.mu.RLock()
	defer d.mu.RUnlock()
	cur, ok := d.parents[child]
	return fam, ok && cur == fam
}

// hostOf returns the host recorded for a family ("" when none is).
func (d *sessionDirectory) hostOf(family string) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.hosts[family]
}

// moveHost records host for a family when replace approves of the host
// recorded now ("" when none is). It runs under the writers' lock, so no
// other write lands between the check and its own.
func (d *sessionDirectory) moveHost(family, host string, replace func(cur string) bool) error {
	return d.set(tableFamilyHost, d.hosts, family, host, replace)
}

// setDirectory durably records the directory a family's parent runs in.
func (d *sessionDirectory) setDirectory(family, dir string) error {
	return d.set(tableFamilyDir, d.dirs, family, dir, always)
}

// adoptDirectory records a family's directory when none is recorded yet.
func (d *sessionDirectory) adoptDirectory(family, dir string) error {
	return d.set(tableFamilyDir, d.dirs, family, dir, func(cur string) bool { return cur == "" })
}

func always(string) bool { return true }

func (d *sessionDirectory) set(table string, m map[string]string, family, v string, replace func(cur string) bool) error {
	read := func() string {
		d.mu.RLock()
		defer d.mu.RUnlock()
		return m[family]
	}
	if v == "" || read() == v {
		return nil // most events name what is recorded: no writer lock
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if cur := read(); cur == v || !replace(cur) {
		return nil
	}
	if err := d.rows.Put(table, family, []byte(v)); err != nil {
		return err
	}
	d.mu.Lock()
	m[family] = v
	d.mu.Unlock()
	return nil
}

// directory returns the recorded directory of a family.
func (d *sessionDirectory) directory(family string) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.dirs[family]
}

// familiesOn lists the families recorded on host.
func (d *sessionDirectory) familiesOn(host string) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []string
	for f, h := range d.hosts {
		if h == host {
			out = append(out, f)
		}
	}
	return out
}

// dropFamilyRecord drops the host and directory rows of id, which turned
// out to be no family, keeping every child link (a session linked under id
// still reaches id's real family through id's own link).
func (d *sessionDirectory) dropFamilyRecord(id string) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	for _, table := range []string{tableFamilyHost, tableFamilyDir} {
		if err := d.rows.Delete(table, id); err != nil {
			return err
		}
	}
	d.mu.Lock()
	delete(d.hosts, id)
	delete(d.dirs, id)
	d.mu.Unlock()
	return nil
}

// forget drops a family that is gone for good, and its children's links.
func (d *sessionDirectory) forget(family string) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.mu.Lock()
	var kids []string
	for c, p := range d.parents {
		if p == family {
			kids = append(kids, c)
		}
	}
	d.mu.Unlock()
	for _, c := range kids {
		if err := d.rows.Delete(tableParents, c); err != nil {
			return err
		}
	}
	for _, table := range []string{tableFamilyHost, tableFamilyDir} {
		if err := d.rows.Delete(table, family); err != nil {
			return err
		}
	}
	d.mu.Lock()
	for _, c := range kids {
		delete(d.parents, c)
	}
	delete(d.hosts, family)
	delete(d.dirs, family)
	d.mu.Unlock()
	return nil
}
