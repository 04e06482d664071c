// Package thatch is the embedding API of the thatch runtime: build a Runtime
// from a config, start it, stop it. `thatch serve` is a thin wrapper around
// it, and a Go program can run the same runtime in-process.
//
//	cfg := config.Defaults()
//	cfg.ResolvePaths(os.Environ(), "")
//	rt, err := thatch.New(cfg, thatch.Options{Logger: logger})
//	if err != nil { ... }
//	if err := rt.Start(ctx); err != nil { ... }
//	defer rt.Stop(context.Background())
//
// The runtime opens the Pebble store under cfg.Data.Dir, builds the
// supervision tree (rehydrating entities with unfinished work before any
// input is accepted), then opens the loopback control API.
package thatch
