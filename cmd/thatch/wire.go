package main

import (
	"context"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/config"
)

// wire connects the front ends (opencode hosts, plugin routes) to the
// runtime before it starts.
func wire(_ context.Context, _ *thatch.Runtime, _ *config.Config) error {
	return nil
}
