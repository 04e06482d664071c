// Package imbinding is the pure decision core of an IM binding: the entity
// that owns one chat thread's binding to an agent session running in a
// tmux window. It decides the four routes of a message (forward, name
// mismatch, agent mismatch, window dead), runs the setup and recovery
// flows as explicit steps, keeps every message that arrives while a prompt
// or a setup is open, and keeps an outbox of chat messages so that no
// reply is lost across a crash.
//
// # Imports
//
// imbinding may import actors and messages only (and the standard
// library's pure packages). It does no I/O: the IM front end carries out
// its effects (messages.IMCheckWindow, IMSendToWindow, IMSendChat, ...)
// and sends their results back as messages.
//
// # Threads, users, updates
//
// An entity's id is its thread's key, as the chat adapter made it (im/chat:
// "tg:<chat>:<thread>", "fs:<chat_id>", ...): the binding reads from it only
// a name to fall back on while no update has named the thread
// (State.Name). Users and chat message ids are the platform's, as text
// (older journals' numbers decode as their decimal text). Each update is
// taken once, by its id: ids increase along a thread, and one at or below
// the last taken is a platform's redelivery (see messages.IMUpdateIDReset).
//
// # Phases
//
//	unbound --message--> setup --Session ready!--> bound
//	bound --check: name/agent/dead--> prompting --choice--> bound | setup | recovering
//	recovering --Session ready!--> bound
//
// A message that arrives in any phase but bound-and-idle is queued and
// typed into the window, in order, once the flow has finished.
package imbinding
