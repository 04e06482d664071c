// Package e2e holds thatch's end-to-end suite (Ginkgo): the built thatch
// binary against a real opencode server (opencode-ai, the version in
// opencode.version, installed by install-opencode.sh into a cache folder),
// the real plugin, and a scripted fake model (package fakemodel).
//
// The non-test files are the harness: World isolates HOME and the XDG
// folders of one spec in a temp dir; Daemon runs `thatch serve`; OpenCode
// runs `opencode serve` with a provider that points at the fake model and
// records the server's event stream. Specs are in the *_test.go files and
// share e2e_suite_test.go, which builds the binary once.
//
// Run it with `make e2e` (go test -count=1 ./e2e/... -ginkgo.v). Specs that
// need opencode carry Label("opencode"); -ginkgo.label-filter='!opencode'
// runs the rest without npm or network.
//
// Nothing here kills a process it did not start: every process is stopped
// through its own gexec session (its PID).
package e2e
