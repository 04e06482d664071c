package front

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/im/cluster"
)

// The configuration and the cluster hold the same rule for a node's
// name (config may not import the cluster and its NATS server): a name
// check-config accepts is one the cluster starts with, and the other way
// round.
func TestConfigAndClusterAgreeOnNodeNames(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(
			rapid.StringMatching(`[A-Za-z0-9_-]{0,70}`),
			rapid.StringMatching(`[A-Za-z0-9_. :/@*>-]{1,20}`),
			rapid.String(),
		).Draw(t, "name")
		c := config.Defaults()
		c.Cluster.Node = name
		err := c.Validate()
		configOK := err == nil || !strings.Contains(err.Error(), "cluster.node")
		if name == "" {
			configOK = false // no name: no cluster at all, not a bad name
		}
		if configOK != cluster.ValidNode(name) {
			t.Fatalf("node name %q: config accepts it: %v, the cluster: %v (%v)", name, configOK, cluster.ValidNode(name), err)
		}
	})
}
