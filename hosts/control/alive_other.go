//go:build !unix

package control

// processAlive cannot tell on this platform, so it says yes and leaves the
// verdict to the /healthz probe.
func processAlive(int) bool { return true }
