// Package fakewire holds the wire pieces that the end-to-end suite's fake
// model servers (fakeanthropic, fakeresponses, fakemodel) share, so that
// each of them says only what its own API looks like:
//
//   - Hold keeps an answer back for a delay and until a gate opens, and
//     gives up when the client leaves or the server closes;
//   - Stream writes server-sent events, flushed one by one as a model
//     streams them;
//   - Read parses a stream of server-sent events back, for the fakes'
//     own tests;
//   - Text flattens an OpenAI-style message content (a string or a list of
//     parts with text) to its text.
//
// It may import only the standard library. It is test support: it holds no
// thatch logic.
//
// # Example
//
//	func answer(w http.ResponseWriter, r *http.Request) {
//		st := fakewire.Open(w)
//		st.Event("response.created", map[string]any{"type": "response.created"})
//		if !fakewire.Hold(r.Context(), quit, delay, gate) {
//			return
//		}
//		st.Event("response.completed", map[string]any{"type": "response.completed"})
//	}
package fakewire
