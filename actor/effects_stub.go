package actor

// TEMPORARY (wip-wire): replaced by effects.go from wip-effects.
func (a *Actor) takeEffects() [][]byte             { return nil }
func (a *Actor) dropEffects()                      {}
func (a *Actor) replayEffect(payload []byte) error { return nil }
