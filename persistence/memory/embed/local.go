package embed

import (
	"context"
	"math"
	"slices"
	"unicode"
)

// DefaultLocalDim is the vector length of Local when Dimensions is zero.
// 512 buckets keep hash collisions between unrelated grams rare enough for
// the 0.85 duplicate threshold while the memory store holds each vector in
// 512 bytes.
const DefaultLocalDim = 512

// Local is the offline default embedder: hashed character n-grams.
//
// The text is lowercased, every run of characters that are neither letters
// nor digits becomes one space, and the result is padded with a space at
// each end so that word starts and ends form their own grams. Every 3-, 4-
// and 5-rune gram is hashed to a bucket and a sign (the sign makes unrelated
// grams that share a bucket cancel out on average instead of adding up). A
// gram seen tf times adds 1+ln(tf), so a repeated word does not drown the
// rest. The vector is normalised to unit length.
//
// The zero value is ready to use.
type Local struct {
	// Dimensions is the vector length. Default: DefaultLocalDim (512).
	Dimensions int
}

// Name includes the algorithm version: vectors stored by an older version are
// re-embedded rather than compared with new ones.
func (l Local) Name() string { return "local-ngram3to5-v1" }

// Dim is Dimensions, or DefaultLocalDim when that is zero or negative.
func (l Local) Dim() int {
	if l.Dimensions <= 0 {
		return DefaultLocalDim
	}
	return l.Dimensions
}

// Embed never fails except on a cancelled context; it does no I/O.
func (l Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var scratch []uint64
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i], scratch = l.vector(t, scratch)
	}
	return out, nil
}

// Vector embeds one text.
func (l Local) Vector(text string) []float32 {
	v, _ := l.vector(text, nil)
	return v
}

func (l Local) vector(text string, hashes []uint64) ([]float32, []uint64) {
	dim := l.Dim()
	v := make([]float32, dim)
	runes := normalizeRunes(text)
	hashes = gramHashes(runes, hashes[:0])
	if len(hashes) == 0 {
		return v, hashes
	}
	slices.Sort(hashes)
	for i := 0; i < len(hashes); {
		j := i + 1
		for j < len(hashes) && hashes[j] == hashes[i] {
			j++
		}
		h := mix64(hashes[i])
		w := float32(1 + math.Log(float64(j-i)))
		b := int((h >> 1) % uint64(dim))
		if h&1 == 1 {
			w = -w
		}
		v[b] += w
		i = j
	}
	Normalize(v)
	return v, hashes
}

// normalizeRunes lowercases text, turns every run of non-letters and
// non-digits into one space and pads both ends with a space.
func normalizeRunes(text string) []rune {
	out := make([]rune, 0, len(text)+2)
	out = append(out, ' ')
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			out = append(out, unicode.ToLower(r))
			continue
		}
		if out[len(out)-1] != ' ' {
			out = append(out, ' ')
		}
	}
	if out[len(out)-1] != ' ' {
		out = append(out, ' ')
	}
	if len(out) == 1 {
		return nil
	}
	return out
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	minGram   = 3
	maxGram   = 5
)

// gramHashes appends the FNV-1a hash of every 3..5-rune gram of runes. Texts
// shorter than three runes (after padding) contribute their whole text as
// one gram, so a two-letter query still has a vector.
func gramHashes(runes []rune, dst []uint64) []uint64 {
	if len(runes) == 0 {
		return dst
	}
	if len(runes) < minGram {
		h := uint64(fnvOffset)
		for _, r := range runes {
			h = (h ^ uint64(r)) * fnvPrime
		}
		return append(dst, h)
	}
	for i := range runes {
		h := uint64(fnvOffset)
		for n := 1; n <= maxGram && i+n <= len(runes); n++ {
			h = (h ^ uint64(runes[i+n-1])) * fnvPrime
			if n >= minGram {
				dst = append(dst, h)
			}
		}
	}
	return dst
}

// mix64 is the splitmix64 finaliser: FNV's low bits are weak, and the bucket
// and sign come from all 64 bits after mixing.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
