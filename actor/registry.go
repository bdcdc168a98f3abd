package actor

import (
	"slices"

	"github.com/cellar-db/cellar/storage"
)

// Families with state of their own plug into the core here
// (docs/architecture.md, "Where changes go": "A family with state of its
// own").
//
// A family that keeps state beyond the database (search's index catalog,
// scripting's Lua states and caches, MIGRATE's keys in flight) registers
// the maker of that state once, from a package variable in its own file
// (registerFamily). Each actor makes every registered family's state in
// New and keeps it in its registry; the family finds its state through the slot registration gave
// it (a typed accessor in its file), and the Actor struct holds none of
// it. The state implements whichever of the hook interfaces below it
// needs; New finds them once, and the core calls the hooks at the moments
// their doc comments name, never a family by name.
//
// Every hook runs on the actor goroutine, inside a round (so a.roundErr
// is the round's; a hook fails the round by setting it), except a
// loader's first call, in New, before Run starts; and in the order the
// families registered: package variables are initialized file by file
// in name order, so MIGRATE (migrate.go) comes before scripting
// (scripting.go), and scripting before search (search.go). No family's hook may depend on another family's having
// run.

// A loader reads the family's state from the database: in New, once every
// family's state is made (an error fails New), and again after a failed
// round rolled its transaction back (abandonRound), when the memory may
// hold what the database no longer does (an error is logged then). It
// makes the memory what the database holds, whatever the memory held.
type loader interface{ load() error }

// A touchedListener hears the change record of the keys touched step
// (touched.go, keysTouched), after the core's own steps (redo records,
// notifications, wake-ups, WATCH, tracking) and only while the
// round stands. Only the listeners that asked (listenTouched) hear it, so
// that a server where no family has work pays one length test per step.
type touchedListener interface{ keysTouched(ts []storage.Touch) }

// A housekeeper does a bounded slice of background work at each
// housekeeping step that sweeps expired keys (housekeeping.go: not during
// CLIENT PAUSE, after DEBUG SET-ACTIVE-EXPIRE 0, or while a flush holds
// SQLite), after the sweep's keys touched step and while the round
// stands; more asks for another step soon (the next round), as a full
// sweep does.
type housekeeper interface{ housekeep() (more bool) }

// An infoer adds fields to INFO's sections (info.go): it is called at the
// end of every section INFO prints, with the section's name and the
// section's writer of a "key:value" line.
type infoer interface {
	info(section string, kv func(k string, v any))
}

// A syncLoader takes the function libraries a master's full sync carried
// beside the keys (the RDB's, or a physical snapshot's header): called
// when the synced data is swapped in (ReplicaPromote, promoteImported),
// after the databases were replaced, in the same transaction.
type syncLoader interface {
	loadSynced(functions [][]byte) error
}

// familyMaker is one registered family: its name (for logs) and the maker
// of an actor's state of it.
type familyMaker struct {
	name string
	make func(a *Actor) any
}

// familyMakers are the registered families, in registration order. It is
// only appended to by registerFamily, while the package initializes.
var familyMakers []familyMaker

// familySlot is a registered family's place in every actor's registry;
// T is the type of its state.
type familySlot[T any] int

// registerFamily registers a family with state of its own and returns its
// slot. Call it from a package variable's initializer, never later: New
// reads the registrations.
func registerFamily[T any](name string, make func(a *Actor) *T) familySlot[T] {
	familyMakers = append(familyMakers, familyMaker{name: name, make: func(a *Actor) any { return make(a) }})
	return familySlot[T](len(familyMakers) - 1)
}

// of is a's state of the family.
func (s familySlot[T]) of(a *Actor) *T { return a.fam.states[s].(*T) }

// registry is an actor's families: their states, by slot, and the hooks
// they implement. Everything but touched is fixed once New has made it,
// so the loops may read a state's goroutine-safe parts (ScriptWatch).
type registry struct {
	states []any
	// loaders and their families' names (for the logs).
	loaders      []loader
	loaderNames  []string
	housekeepers []housekeeper
	infoers      []infoer
	syncLoaders  []syncLoader
	// listeners are the families that may hear the change record, wants
	// which of them asked to now, and touched those (listenTouched): the
	// keys touched step ranges over touched alone.
	listeners []touchedListener
	wants     []bool
	touched   []touchedListener
}

// makeFamilies makes a's state of every registered family and finds the
// hooks each implements.
func (a *Actor) makeFamilies() {
	r := &a.fam
	for _, m := range familyMakers {
		st := m.make(a)
		r.states = append(r.states, st)
		if h, ok := st.(loader); ok {
			r.loaders = append(r.loaders, h)
			r.loaderNames = append(r.loaderNames, m.name)
		}
		if h, ok := st.(touchedListener); ok {
			r.listeners = append(r.listeners, h)
			r.wants = append(r.wants, false)
		}
		if h, ok := st.(housekeeper); ok {
			r.housekeepers = append(r.housekeepers, h)
		}
		if h, ok := st.(infoer); ok {
			r.infoers = append(r.infoers, h)
		}
		if h, ok := st.(syncLoader); ok {
			r.syncLoaders = append(r.syncLoaders, h)
		}
	}
}

// loadFamilies runs every loader, in New: the first error fails New.
func (a *Actor) loadFamilies() error {
	for _, h := range a.fam.loaders {
		if err := h.load(); err != nil {
			return err
		}
	}
	return nil
}

// reloadFamilies runs every loader after a rollback (abandonRound),
// logging what fails.
func (a *Actor) reloadFamilies() {
	for i, h := range a.fam.loaders {
		if err := h.load(); err != nil {
			a.log.Error().Err(err).Str("family", a.fam.loaderNames[i]).Msg("reloading a family's state after a rollback")
		}
	}
}

// listenTouched says whether h, a family's state, hears the keys touched
// step's change record from now on: a family asks while it has work there
// (search: while an index exists), and only then.
func (r *registry) listenTouched(h touchedListener, on bool) {
	i := slices.Index(r.listeners, h)
	if r.wants[i] == on {
		return
	}
	r.wants[i] = on
	// A new slice: the step may be ranging over the old one.
	var touched []touchedListener
	for j, l := range r.listeners {
		if r.wants[j] {
			touched = append(touched, l)
		}
	}
	r.touched = touched
}

// housekeepFamilies runs every housekeeper while the round stands; more
// is whether any asked for another step soon.
func (a *Actor) housekeepFamilies() (more bool) {
	for _, h := range a.fam.housekeepers {
		if a.roundErr != nil {
			break
		}
		if h.housekeep() {
			more = true
		}
	}
	return more
}

// loadSynced gives every syncLoader the function libraries of a master's
// full sync.
func (a *Actor) loadSynced(functions [][]byte) error {
	for _, h := range a.fam.syncLoaders {
		if err := h.loadSynced(functions); err != nil {
			return err
		}
	}
	return nil
}
