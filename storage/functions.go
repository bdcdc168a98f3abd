package storage

// The function libraries (FUNCTION LOAD): kept in their own table, outside
// the databases, and loaded again at start-up. Each write records a
// Functions change, so the command that made it is logged for the redo log
// like any write.

var (
	qLibList   = newQuery("SELECT name, code FROM function_libraries ORDER BY name")
	qLibSave   = newQuery("INSERT INTO function_libraries (name, code) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET code = excluded.code")
	qLibDelete = newQuery("DELETE FROM function_libraries WHERE name = ?1")
	qLibFlush  = newQuery("DELETE FROM function_libraries")
)

// Library is a stored function library.
type Library struct {
	Name string
	Code []byte
}

// FunctionLibraries returns every stored library, by name.
func (s *Store) FunctionLibraries() ([]Library, error) {
	st := s.q(qLibList)
	defer st.reset()
	var libs []Library
	for {
		row, err := st.step()
		if err != nil {
			return nil, err
		}
		if !row {
			return libs, nil
		}
		libs = append(libs, Library{Name: string(st.colBlob(0, nil)), Code: st.colBlob(1, nil)})
	}
}

// SaveFunctionLibrary stores (or replaces) a library.
func (s *Store) SaveFunctionLibrary(name string, code []byte) error {
	st := s.q(qLibSave)
	st.blob(1, []byte(name))
	st.blob(2, code)
	if err := st.exec(); err != nil {
		return err
	}
	s.dirty = true
	s.record(0, []byte(name), Functions, 0)
	return nil
}

// DeleteFunctionLibrary removes a library.
func (s *Store) DeleteFunctionLibrary(name string) error {
	st := s.q(qLibDelete)
	st.blob(1, []byte(name))
	if err := st.exec(); err != nil {
		return err
	}
	s.dirty = true
	s.record(0, []byte(name), Functions, 0)
	return nil
}

// FlushFunctionLibraries removes every library.
func (s *Store) FlushFunctionLibraries() error {
	if err := s.q(qLibFlush).exec(); err != nil {
		return err
	}
	s.dirty = true
	s.record(0, nil, Functions, 0)
	return nil
}
