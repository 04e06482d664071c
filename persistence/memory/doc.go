// Package memory is thatch's durable memory store: short notes that agents
// write with memory_remember and get back with recall, kept per project in
// the same Pebble database as the journal.
//
// # Stores, slugs and branches
//
// Entries live in stores. A project's store is "owner/repo" of its origin
// remote (ProjectStore); memories that belong to no project go to
// GlobalStore, and a session recalls from both (SessionStores). Within a
// store an entry is named by the slug of its label (Slugify), so
// remembering the same label twice fails with ErrExists unless the caller
// asks to overwrite. A slug longer than MaxSlugBytes ends in a hash of the
// whole slug, so long labels that start alike stay different entries;
// entries stored before that keep their cut slug and are still found by
// their label. Store and branch names are at most MaxNameBytes long. An
// entry with a Branch applies only to that git
// branch; a recall on a branch sees that branch's entries and the
// project-wide ones.
//
//	ms, err := memory.Open(st, memory.Options{})
//	res, err := ms.Remember(ctx, memory.RememberInput{
//		Store: memory.ProjectStore(dir), Label: "pebble sync", Content: "...",
//	})
//	hits, err := ms.Recall(ctx, memory.RecallInput{
//		Query: "fsync", Stores: memory.SessionStores(memory.ProjectStore(dir)),
//	})
//
// # Similarity
//
// Entries are compared by the cosine similarity of vectors from an
// embed.Embedder (offline embed.Local by default). Each stored vector
// records the embedder's name and dimension; after a switch of embedder,
// Open re-embeds old entries, and an entry it cannot re-embed is left out of
// recall and dedup rather than compared with vectors of another kind.
//
// All vectors are held in memory as int8, with a 1024-bit sketch each.
// Searches over many entries narrow the field by sketch distance and then
// score the survivors exactly, which keeps a recall over 100,000 entries to
// a few milliseconds (see memory_bench_test.go).
//
// # Hygiene
//
// Hygiene reports, per store, unjudged possible duplicates, stale entries
// and branch memories whose branch is gone. Duplicate pairs are found once,
// when an entry is written, and kept in the database; a pair judged with
// ResolvePair is not reported again until one of its entries is
// overwritten. The other two signals are counted from the in-memory index,
// so the heartbeat does no disk scan.
//
// # Keys and imports
//
// Keys start with 'm' (entries) or 'n' (vectors, pairs, verdicts) and so
// never meet the journal's. The package imports Pebble, hclog, persistence
// and embed, and runs git only in ProjectStore and GitBranches. It starts no
// goroutines.
package memory
