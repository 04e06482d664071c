package front

import "syscall"

// childAttr puts a child in a process group of its own, killed when
// thatch dies (even by SIGKILL), so that no child outlives the daemon
// that waits for it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
