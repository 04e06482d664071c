package thatch

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportBoundaries turns the package rules of ARCHITECTURE.md into a
// failing test. It checks the whole dependency closure of every package
// (go list -deps), not only its direct imports: a decision core that
// reaches Pebble through a helper package breaks the rule as surely as
// one that imports it.
func TestImportBoundaries(t *testing.T) {
	const mod = "github.com/thatch-run/thatch"
	const (
		pebble     = "github.com/cockroachdb/pebble"
		protoactor = "github.com/asynkron/protoactor-go"
		nethttp    = "net/http"
	)
	// Each rule: the packages it covers (a folder and everything under
	// it, "" for the module root alone) and what their closure may not
	// hold. A forbidden entry ending in "/..." covers a tree.
	rules := []struct {
		pkgs      string
		forbidden []string
	}{
		// The shared vocabulary: nothing of ours, no storage, no wire.
		{"messages/...", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", mod + "/im/...", mod + "/config/...", pebble, protoactor, nethttp}},
		// The decision cores: pure, so no storage, no actors runtime, no wire.
		{"actors/...", []string{mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", mod + "/im/...", mod + "/config/...", pebble, protoactor, nethttp}},
		// Storage knows no actors and no front end.
		{"persistence/...", []string{mod + "/actors/...", mod + "/supervisor/...", mod + "/hosts/...", mod + "/im/...", protoactor}},
		// The runtime knows no front end.
		{"supervisor/...", []string{mod + "/hosts/...", mod + "/im/...", mod + "/config/..."}},
		// Protocol adapters translate wire traffic into messages and decide
		// nothing: no actors, no storage.
		{"hosts/opencode", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/im/...", pebble, protoactor}},
		{"hosts/opencode/install/...", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/im/...", pebble, protoactor}},
		{"hosts/opencode/plugin/...", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/im/...", pebble, protoactor}},
		{"hosts/control", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/im/...", mod + "/messages/...", pebble, protoactor}},
		{"hosts/memmcp", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/im/...", mod + "/messages/...", mod + "/hosts/...", pebble, protoactor}},
		// A front end never reaches another.
		{"hosts/opencode/front/...", []string{mod + "/im/..."}},
		// The chat interface is types only: nothing of thatch, no storage,
		// no actors runtime, no wire (the adapters bring their own).
		{"im/chat", []string{mod, mod + "/...", pebble, protoactor, nethttp}},
		// The IM parts speak tmux, the agents' files and the chat
		// platforms; they know nothing of entities or storage.
		{"im/tmux", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", pebble, protoactor}},
		{"im/agents", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", pebble, protoactor}},
		{"im/telegram", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", pebble, protoactor}},
		// The pane renderer draws text: nothing of thatch, no storage, no
		// wire.
		{"im/screenshot", []string{mod, mod + "/...", pebble, protoactor, nethttp}},
		// The cluster speaks NATS; it knows nothing of entities, storage
		// or the config.
		{"im/cluster", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", mod + "/config/...", pebble, protoactor}},
		{"im/feishu", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", pebble, protoactor}},
		// The IM front end, like the opencode one, never imports another.
		{"im/front/...", []string{mod + "/hosts/..."}},
		// The web page is a front end like the others: it reads the status
		// report through a function cmd gives it (as JSON), never another
		// front end or the decision cores behind them.
		{"ui/...", []string{mod + "/hosts/opencode", mod + "/hosts/opencode/...", mod + "/actors/ocfamily", mod + "/actors/ocregistry", mod + "/actors/sweeper", mod + "/actors/imbinding", mod + "/im/..."}},
		{"config/...", []string{mod + "/actors/...", mod + "/persistence/...", mod + "/supervisor/...", mod + "/hosts/...", mod + "/im/...", mod + "/messages/...", pebble, protoactor, nethttp}},
		// The shared helpers (the backoff, the tests' polling, the secret
		// redactor internal/redact) are leaves:
		// nothing of thatch, no storage, no actors runtime, no wire.
		{"internal/...", []string{mod, pebble, protoactor, nethttp}},
		// The root composes front ends it is given: it holds none itself.
		{"", []string{mod + "/hosts/opencode", mod + "/hosts/opencode/...", mod + "/actors/ocfamily", mod + "/im/..."}},
	}
	checked := 0
	for _, r := range rules {
		pattern := "./" + r.pkgs
		out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Deps \" \"}}", pattern).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok && strings.Contains(string(ee.Stderr), "matched no packages") {
				continue
			}
			t.Fatalf("go list %s: %v", pattern, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, deps, _ := strings.Cut(line, "\t")
			checked++
			for _, dep := range strings.Fields(deps) {
				for _, bad := range r.forbidden {
					if covers(bad, dep) && dep != pkg {
						t.Errorf("%s depends on %s, which %s may not (ARCHITECTURE.md, package boundaries)", pkg, dep, ruleName(r.pkgs))
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked", checked)
	}
}

// TestDecisionCoresArePure says what the rules above imply for the cores a
// reviewer cares most about: no Pebble, no protoactor and no net/http
// anywhere in their closure.
func TestDecisionCoresArePure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./actors/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/cockroachdb/pebble") || strings.HasPrefix(dep, "github.com/asynkron/protoactor-go") || dep == "net/http" {
			t.Errorf("the decision cores (actors/...) depend on %s", dep)
		}
	}
	if !strings.Contains(string(out), "github.com/thatch-run/thatch/actors/ocfamily") {
		t.Fatal("go list did not list the opencode family core")
	}
}

func covers(rule, pkg string) bool {
	if base, ok := strings.CutSuffix(rule, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == rule || strings.HasPrefix(pkg, rule+"/")
}

func ruleName(pkgs string) string {
	if pkgs == "" {
		return "the root package"
	}
	return pkgs
}
