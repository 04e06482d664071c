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
// vector ranking and dedup rather than compared with vectors of another
// kind (full-text ranking still finds it).
//
// All vectors are held in memory as int8, with a 1024-bit sketch each.
// Searches over many entries narrow the field by sketch distance and then
// score the survivors exactly, which keeps a recall over 100,000 entries to
// a few milliseconds (see memory_bench_test.go).
//
// # Recall: vectors and full text
//
// The offline embedder is good at paraphrase and weak at exact names:
// identifiers, file paths, flags and error strings. Recall therefore ranks
// twice, by vector similarity and by BM25 over label and content (the label
// counting double), and fuses the two top-50 lists by reciprocal rank
// fusion, score = sum of 1/(60+rank). That hybrid is the default;
// RecallInput.Mode asks for RecallVector (recall as it was, cosine plus an
// exact-word boost) or RecallText, which exist to measure the hybrid
// against its parts. The tokenizer keeps a chunk with inner punctuation
// whole ("persistence/memory/recall.go", "--dry-run") and also splits it on
// punctuation, camelCase, snake_case and letter-digit changes, so
// "ErrNotFound" is found by "ErrNotFound", "errnotfound" and "not found".
//
// The BM25 index is this package's own (textindex.go), held in memory per
// store and rebuilt at Open from the entries in Pebble, and not bleve. It
// is derived data and never written, so there is no second on-disk index to
// keep consistent with Pebble across a crash, nothing to migrate, and no
// new dependency tree; Remember, an archive (Remember with Archived) and
// Forget update it after their batch commits, as they update the vectors.
// Branch and store filters are the shards' own. bleve v2 would bring
// analyzers and scoring we do not need, its own store to rebuild or repair
// at every open, and dozens of modules; it was not measured here. The cost
// is a scan of the entries at Open (indexing 100,000 synthetic memories
// took 1.9 s on a loaded 2-core VM) and about 40 MB of postings per
// 100,000 memories. A BM25 search scans the postings of the query's terms
// exactly; at 100,000 memories it costs about 2 ms, less than the vector
// search beside it.
//
// testdata/eval holds an evaluation set written like a real project's
// memories and questions; TestRecallEvaluation and the bench's recall
// records report recall@5 of the three modes on it.
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
