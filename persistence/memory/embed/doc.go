// Package embed turns memory text into vectors for thatch's memory store.
//
// The memory store compares memories by cosine similarity of their vectors:
// to find the best matches for a recall, and to warn about near-duplicates.
// An Embedder is anything that maps texts to vectors of a fixed length. The
// store records each vector together with the embedder's Name and Dim, so a
// vector made by one embedder is never compared with one made by another.
//
// # Embedders
//
// Local is the default. It needs no network and no model files: it hashes
// character 3-, 4- and 5-grams into a fixed number of signed buckets, weighs
// each gram by 1+ln(count) and normalises the result to unit length. It is
// deterministic, so the same text always gives the same vector on every
// machine. It catches shared wording, not shared meaning.
//
// OpenAI calls an OpenAI-compatible /v1/embeddings endpoint (OpenAI itself,
// Ollama, llama.cpp server, vLLM, ...). It is optional; the memory store works
// fully offline with Local.
//
//	var e embed.Embedder = embed.Local{}
//	vecs, err := e.Embed(ctx, []string{"pebble syncs the WAL before acking"})
//
// # Imports
//
// embed imports only the standard library. It performs network I/O only in
// OpenAI.Embed.
package embed
