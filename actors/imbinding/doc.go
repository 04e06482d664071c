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
// # Phases
//
//	unbound --message--> setup --Session ready!--> bound
//	bound --check: name/agent/dead--> prompting --choice--> bound | setup | recovering
//	recovering --Session ready!--> bound
//
// A message that arrives in any phase but bound-and-idle is queued and
// typed into the window, in order, once the flow has finished.
package imbinding
