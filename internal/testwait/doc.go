// Package testwait is the one way thatch's tests wait for something to
// happen: they poll a condition (Until) instead of sleeping, as STYLE.md
// asks, with one generous limit for every package, so that a slow machine
// slows a test down instead of failing it.
//
// It is for tests only, and a leaf (the standard library alone). Waiting
// proves that something happens; to prove that nothing more happens, use
// the quiescence barrier (supervisor's Tree.Quiesce), not a wait.
//
// # Example
//
//	testwait.Until(t, "the entity to passivate", func() bool {
//		return len(live()) == 0
//	})
//
//	testwait.UntilReason(t, "the pane to show the prompt", func() (bool, string) {
//		text := capture()
//		return strings.Contains(text, "> "), text
//	})
package testwait
