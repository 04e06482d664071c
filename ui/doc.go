// Package ui is thatch's web page: a view of the memory store, the hygiene
// pairs to judge, the opencode sessions, the extractions and the IM
// bindings, served on the control API's loopback listener under /ui/.
//
// # Security
//
// The page is a front end of the runtime (supervisor/frontend.FrontEnd)
// that mounts one bearer-token route, POST /v1/ui/code, and its pages
// through control.Server.MountBrowser. `thatch ui` calls the token route
// and prints a one-time URL, /ui/login?code=...; the code expires after
// CodeTTL and works once. It is exchanged for a random session id in an
// HttpOnly, SameSite=Strict cookie with Path=/ui. Every page checks that
// cookie.
//
// The control API's guard still checks Host on every route and refuses an
// Origin header everywhere except under /ui/, where it must name the very
// origin the request was sent to. A POST must carry that Origin (browsers
// send it on every form POST), a Sec-Fetch-Site of same-origin when the
// browser sends one, and the session's form token. Pages are rendered with
// html/template, which escapes every memory, label and status field, and
// are served with a Content-Security-Policy that allows only this page's
// own script and style.
//
// # Imports
//
// ui may import the control API (for MountBrowser), the front-end contract
// and the memory store's types. It reads the runtime's status through a
// function cmd/thatch gives it (SetStatus) and renders that report
// generically from its JSON, so that it never imports another front end.
//
//	u := ui.New(ui.Options{Logger: log.Named("ui")})
//	rt, _ := thatch.New(cfg, thatch.Options{FrontEnds: []frontend.FrontEnd{oc, u}})
//	u.SetStatus(func(context.Context) (any, error) { return rt.StatusReport() })
package ui
