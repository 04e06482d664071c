package ui

import (
	"embed"
	"html/template"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

// parsePages parses the page templates; they are part of the binary, so a
// template that does not parse is a bug that panics at start.
func parsePages() *template.Template {
	funcs := template.FuncMap{
		// dict3 hands the row actions their form token, return path and row.
		"dict3": func(csrf, back string, r row) actionData { return actionData{CSRF: csrf, Back: back, Row: r} },
		"short": func(s string, n int) string {
			s = strings.Join(strings.Fields(s), " ")
			if r := []rune(s); len(r) > n {
				return string(r[:n-1]) + "…"
			}
			return s
		},
	}
	return template.Must(template.New("ui").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))
}

// actionData is what the forget and archive buttons of one row need.
type actionData struct {
	CSRF, Back string
	Row        row
}
