package delivery

// MaxUnrecorded is maxUnrecorded, for the tests of package delivery_test.
const MaxUnrecorded = maxUnrecorded

// StepsOf is send id's step queue in e's send cache, for identity (nil:
// the send is not cached).
func StepsOf(e *Engine, id int64) any {
	e.sends.mu.Lock()
	defer e.sends.mu.Unlock()
	if cs := e.sends.m[id]; cs != nil {
		return cs.steps
	}
	return nil
}
