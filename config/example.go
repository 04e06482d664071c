package config

import _ "embed"

// ExampleTOML is the commented example configuration shipped with thatch,
// for cmd to print or install. It documents every key with its default, and
// loading it yields exactly Defaults (tests hold it to that).
//
//go:embed thatch.example.toml
var ExampleTOML []byte
