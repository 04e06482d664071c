package front

import (
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// inspectTimeout bounds how long status waits for one family's view.
const inspectTimeout = 5 * time.Second

// Report lists the status views of the families: every persisted one and
// every live one, sorted by id, at most limit (0: all); a family that
// cannot answer shows its error instead of its view.
func (o *FrontEnd) Report(limit int) ([]any, int) {
	return frontend.Report(o.tree, o.jr, ocfamily.KindName, "family", limit, inspectTimeout)
}
