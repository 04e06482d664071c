// Package install puts thatch into an opencode config directory: the
// plugin, the wrap-up commands /thatch/compact and /thatch/exit, the
// thatch-fact-extractor skill, and the npm package the plugin imports.
// `thatch install opencode` is its only caller.
//
// # Where things go (checked against opencode 1.18.33)
//
// opencode reads every config directory (the global one,
// $XDG_CONFIG_HOME/opencode, and each .opencode folder from the project up)
// for plugin/*.js, command/**/*.md and skills/**/SKILL.md; it also accepts
// plugins/, commands/ and skill/. The command name is the path below
// command/ without .md, so command/thatch/compact.md runs as
// /thatch/compact.
//
// At start-up opencode npm-installs @opencode-ai/plugin into every config
// directory whose node_modules is missing, or whose package.json names a
// dependency that package-lock.json lacks, and plugins wait for it: about
// 7 s, or a long stall where npm is unreachable. Install runs the same
// npm install ahead of time, in the target directory and in the global
// one (opencode always reads the global directory too).
//
// # Idempotence
//
// A file is written only when its content differs, and npm runs only when
// the package is missing, so a second Install reports no change. Install
// never deletes anything.
//
// # Imports
//
// install imports the plugin package and the standard library. It prints
// nothing: the Report says what happened and cmd shows it.
package install
