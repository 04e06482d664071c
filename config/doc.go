// Package config builds thatch's configuration: it loads the layers, resolves
// derived paths, and validates the result, reporting every problem at once.
//
// # Layers
//
// Load builds a Config from four layers; each overrides the ones before it:
//
//  1. Defaults, built into the binary.
//  2. One file, TOML (.toml) or YAML (.yaml, .yml): the --config path, else
//     $THATCH_CONFIG, else $XDG_CONFIG_HOME/thatch/config.toml
//     (XDG_CONFIG_HOME defaults to ~/.config). A file named by --config or
//     $THATCH_CONFIG must exist; the default one may be missing.
//  3. THATCH_* environment variables, one per key: control.token_file is
//     THATCH_CONTROL_TOKEN_FILE (upper case, dots to underscores).
//  4. Command-line flags from RegisterFlags, one per key: control.token_file
//     is --control-token-file. Only flags the user set count.
//
// Then Load fills the paths left empty: data.dir from $XDG_DATA_HOME/thatch
// (XDG_DATA_HOME defaults to ~/.local/share), control.token_file and
// control.state_file from data.dir. Durations are written as Go duration
// strings ("15m") in every layer and are time.Duration in Config.
// opencode.servers, a list, can only be set in a file.
//
// # Validation
//
// Validate returns a *ValidationError listing every problem, each naming the
// key (or the environment variable) to fix. Unknown keys in the file and
// unknown THATCH_* variables are problems too, so a typo is never silently
// ignored. Secrets (server passwords, the embeddings API key) have type
// Secret: they never appear in error messages, in Redacted, or when a Config
// is printed with fmt. URLs are not secrets, but the credentials they can
// carry are: Redacted and Validate show them through RedactURL, which masks
// a user info password and credential query parameters such as ?api-key=.
// Code that logs a configured URL calls RedactURL too.
//
// # Example
//
//	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
//	configPath := fs.String("config", "", "config file")
//	config.RegisterFlags(fs)
//	if err := fs.Parse(os.Args[2:]); err != nil {
//		return err
//	}
//	cfg, err := config.Load(config.LoadOptions{
//		File:  *configPath,
//		Env:   os.Environ(),
//		Flags: fs,
//	})
//	if err != nil {
//		return err // names every bad key; cfg is non-nil unless the file was unusable
//	}
//
// ExampleTOML documents every key with its default.
//
// # Imports
//
// config may import koanf (with its providers and parsers), pflag and the
// standard library only. Every other package may import it.
package config
