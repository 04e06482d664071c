package embed

import (
	"context"
	"errors"
	"math"
)

// Embedder maps texts to vectors. Implementations must be safe for
// concurrent use.
type Embedder interface {
	// Name identifies the embedder and its version. Vectors stored under one
	// name are never compared with vectors of another name; change the name
	// whenever the same text would map to a different vector.
	Name() string
	// Dim is the length of every vector Embed returns. It is fixed for the
	// life of the embedder and must be positive.
	Dim() int
	// Embed returns one vector per text, in the order of texts. Vectors need
	// not be normalised; the memory store normalises them.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrBadVector is returned when an embedder produces a vector of the wrong
// length or with NaN or infinite values.
var ErrBadVector = errors.New("embed: bad vector")

// Normalize scales v in place to unit length and reports whether it had a
// non-zero length. A zero vector is left as it is: it is similar to nothing.
func Normalize(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return false
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return true
}

// Cosine is the cosine similarity of a and b, or 0 when either is zero or
// their lengths differ.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// finite reports whether every value of v is a finite number.
func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}
