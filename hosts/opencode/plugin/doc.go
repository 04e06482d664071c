// Package plugin holds thatch's opencode plugin, a small plain-JavaScript
// file, and renders it for installation.
//
// The plugin is the front half of the opencode host: it registers its
// opencode server with the daemon, forwards the hooks the server's event
// bus does not carry (tool.execute.after, command.execute.before) to the
// control API, and defines the tools the model calls
// (thatch_get_extraction_payload, thatch_extraction_done and the memory_*
// tools). The JavaScript source is thatch.js next to this file; it is
// embedded in the binary so that `thatch install opencode` can write it
// without network access.
//
// # What 1.18.33 gives a plugin
//
// A plugin module's every export must be a plugin function (or {server}):
// anything else fails the load. The function receives {client, project,
// worktree, directory, experimental_workspace, serverUrl, $}. serverUrl is
// a getter: the URL of the server's listener, or http://localhost:4096 when
// the server only runs in-process (the TUI started without --port), in
// which case no daemon can reach it and the plugin only warns.
// tool.execute.after and command.execute.before are awaited by opencode,
// so the plugin bounds them with a short timeout.
//
// # Imports
//
// plugin imports only the standard library. Render is pure: it fills in
// the daemon's control file paths and returns bytes.
package plugin
