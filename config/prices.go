package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct{ Input, Output, CacheRead, CacheWrite float64 }

// ErrBadPrice is returned by ParsePrice for a price it cannot read.
var ErrBadPrice = errors.New("config: bad price")

// ParsePrice reads an im.prices entry, "MODEL=IN/OUT[/CACHE_READ[/CACHE_WRITE]]"
// in US dollars per million tokens ("claude-sonnet-4=3/15/0.3/3.75").
func ParsePrice(s string) (model string, p Price, err error) {
	model, list, ok := strings.Cut(s, "=")
	model = strings.TrimSpace(model)
	parts := strings.Split(list, "/")
	if !ok || model == "" || len(parts) < 2 || len(parts) > 4 {
		return "", Price{}, fmt.Errorf("%w %q: want MODEL=IN/OUT[/CACHE_READ[/CACHE_WRITE]] in dollars per million tokens", ErrBadPrice, s)
	}
	var v [4]float64
	for i, part := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", Price{}, fmt.Errorf("%w %q: %q is not a price", ErrBadPrice, s, strings.TrimSpace(part))
		}
		v[i] = f
	}
	return model, Price{Input: v[0], Output: v[1], CacheRead: v[2], CacheWrite: v[3]}, nil
}
