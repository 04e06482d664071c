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
// Run it with `make e2e`: the Ginkgo CLI runs the specs in E2E_PROCS
// parallel processes (4), each spec in a world of its own (isolation.go
// lists the rules and how the suite checks them), and the Serial specs
// (the chaos loops) alone at the end. Specs that need opencode carry
// Label("opencode"); `make e2e E2E_FLAGS=--label-filter='!opencode'`
// runs the rest without npm or network.
//
// Label("protocol") marks the extraction protocol test: a scripted model
// runs skill, payload fetch, memory_remember and ack through the real
// opencode, which proves the protocol works, not how well a model
// extracts. Label("chaos") marks the chaos spec: the daemon is SIGKILLed
// THATCH_CHAOS_KILLS times (default 20) while writers post the plugin's
// tool calls and memories, and after each restart every acknowledged one
// must be found by id. `make chaos` runs it with 1000 kills and prints
// its totals; --label-filter=chaos runs it (and the cluster's chaos
// loop) alone.
//
// Label("cluster") marks the specs of several machines sharing one bot
// (cluster_test.go, cluster_world.go): three daemons on loopback, each
// with its own data dir, HOME and tmux socket, joined by [cluster] and
// polling one fake Bot API that answers 409 to overlapping getUpdates.
// They cover threads on two machines relayed by the one poller, a
// machine killed while its thread is written to (queued, one notice,
// each message typed once after its restart), the poller killed (another
// takes the lease; nothing lost or repeated, no 409), and a chaos loop of
// THATCH_CLUSTER_KILLS kills (default 3; `make chaos` runs 60), labelled
// chaos and Serial like the daemon's. THATCH_CLUSTER_LOGS=DIR keeps
// every daemon's whole log of a failed spec there.
//
// Nothing here kills a process it did not start: every process is stopped
// through its own gexec session (its PID).
package e2e
