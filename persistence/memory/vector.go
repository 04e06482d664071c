package memory

import (
	"math"
	"math/bits"
)

// Vectors are held in memory as int8 with one float32 per vector, the
// inverse length of the int8 vector: cosine(a, b) is then
// dot(qa, qb) * inv(a) * inv(b). Scaling each vector so its largest value is
// ±127 changes a cosine by about 0.001 on average (tested) and keeps 100,000
// 512-dim vectors in 51 MB instead of 205 MB.

// quantize writes v scaled to ±127 and rounded into q, and returns the
// inverse length of q. A zero vector gets 0.
func quantize(v []float32, q []int8) float32 {
	var maxAbs float32
	for _, x := range v {
		if x < 0 {
			x = -x
		}
		maxAbs = max(maxAbs, x)
	}
	if maxAbs == 0 {
		clear(q)
		return 0
	}
	k := 127 / maxAbs
	var ss int64
	for i, x := range v {
		r := int8(max(-127, min(127, math.Round(float64(x*k)))))
		q[i] = r
		ss += int64(r) * int64(r)
	}
	return float32(1 / math.Sqrt(float64(ss)))
}

// dotInt8 is the dot product of two equally long int8 vectors.
func dotInt8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// Sketches.
//
// Comparing a vector with 100,000 others costs 51 million multiply-adds at
// 512 dimensions, about 40 ms on a slow core: too slow for a Remember that
// must stay under 5 ms. Each vector therefore also carries a 1024-bit
// sketch: the signs of its coordinates after pseudo-random rotations
// (random sign flips and Walsh-Hadamard transforms, three rounds). Two
// vectors at angle θ disagree on a sign with probability θ/π, so the
// Hamming distance of sketches estimates the angle at a cost of 16 XOR +
// popcount per vector. Searches use it to pick candidates and then score
// only those exactly.

const (
	sketchBits  = 1024
	sketchWords = sketchBits / 64
	// dedupWords is the prefix of the sketch checked first when looking for
	// duplicates; only vectors close on it are checked on the whole sketch.
	dedupWords = 4
	// sketchVersion is stored with every sketch; a change of the rotation
	// recomputes stored sketches on load.
	sketchVersion = 1
	sketchSeed    = 0x7468617463680001 // "thatch" + 1
)

// sketcher holds the random signs of the rotations for one dimension.
type sketcher struct {
	dim    int
	n      int         // dim rounded up to a power of two, at least 64
	rounds int         // rotations needed for sketchBits bits
	signs  [][]float32 // rounds*3 sign vectors of length n
}

func newSketcher(dim int) *sketcher {
	n := 64
	for n < dim {
		n <<= 1
	}
	rounds := (sketchBits + n - 1) / n
	s := &sketcher{dim: dim, n: n, rounds: rounds}
	state := uint64(sketchSeed) ^ uint64(n)
	for range rounds * 3 {
		v := make([]float32, n)
		for i := range v {
			state += 0x9e3779b97f4a7c15
			if splitmix(state)&1 == 1 {
				v[i] = -1
			} else {
				v[i] = 1
			}
		}
		s.signs = append(s.signs, v)
	}
	return s
}

func splitmix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// sketch writes the sketch of v (of length s.dim) into out (sketchWords).
func (s *sketcher) sketch(v []float32, out []uint64) {
	clear(out)
	x := make([]float32, s.n)
	bit := 0
	for r := 0; r < s.rounds && bit < sketchBits; r++ {
		copy(x, v)
		clear(x[len(v):])
		for k := range 3 {
			sg := s.signs[r*3+k]
			for i := range x {
				x[i] *= sg[i]
			}
			fwht(x)
		}
		for i := 0; i < s.n && bit < sketchBits; i++ {
			if x[i] > 0 {
				out[bit>>6] |= 1 << (bit & 63)
			}
			bit++
		}
	}
}

// fwht is the in-place unnormalised Walsh-Hadamard transform; len(x) must
// be a power of two.
func fwht(x []float32) {
	for h := 1; h < len(x); h <<= 1 {
		for i := 0; i < len(x); i += h << 1 {
			a, b := x[i:i+h], x[i+h:i+2*h]
			for j := range a {
				u, v := a[j], b[j]
				a[j], b[j] = u+v, u-v
			}
		}
	}
}

func hamming(a, b []uint64) int {
	b = b[:len(a)]
	n := 0
	for i := range a {
		n += bits.OnesCount64(a[i] ^ b[i])
	}
	return n
}

// cutoff is the largest Hamming distance over n sketch bits at which a pair
// may still reach cosine t. At cosine t a bit differs with probability
// p = acos(t)/π; the cutoff sits seven standard deviations above the mean
// n*p, so a pair at exactly the threshold is missed with probability below
// 1e-11 per step (less for closer pairs; the rotations are orthogonal, which
// only narrows the spread).
func cutoff(t float64, n int) int {
	if t <= -1 {
		return n
	}
	t = min(t, 1)
	p := math.Acos(t) / math.Pi
	c := float64(n)*p + 7*math.Sqrt(float64(n)*p*(1-p)) + 1
	return min(n, int(math.Ceil(c)))
}

// dedupCutoffs are the Hamming cutoffs of the two candidate steps: over the
// first dedupWords words, and over the whole sketch.
func dedupCutoffs(t float64) (head, whole int) {
	return cutoff(t, dedupWords*64), cutoff(t, sketchBits)
}
