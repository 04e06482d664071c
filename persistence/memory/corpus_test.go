package memory

import (
	"math"
	"math/rand/v2"
	"strings"
)

// corpus makes deterministic English-like memory texts for tests and
// benchmarks: pseudo-words drawn with a Zipf distribution, mixed with common
// function words, so n-gram statistics resemble real notes.
type corpus struct {
	rng   *rand.Rand
	words []string
	cdf   []float64
}

var functionWords = strings.Fields("the a an is are to of in on for with when and or not use run set it this that by from as be after before must never always")

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syll := strings.Fields("ba be bi bo bu ka ke ki ko ku ra re ri ro ru sa se si so su ta te ti to tu na ne ni no nu pe pi po la li lo ver ing tion ex con pro sync pebb wal git log test dir conf serv")
	c := &corpus{rng: rng}
	seen := map[string]bool{}
	for len(c.words) < 8000 {
		n := 2 + rng.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syll[rng.IntN(len(syll))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			c.words = append(c.words, w)
		}
	}
	sum := 0.0
	for i := range c.words {
		sum += 1 / math.Pow(float64(i+1), 1.07)
		c.cdf = append(c.cdf, sum)
	}
	for i := range c.cdf {
		c.cdf[i] /= sum
	}
	return c
}

func (c *corpus) word() string {
	if c.rng.IntN(3) == 0 {
		return functionWords[c.rng.IntN(len(functionWords))]
	}
	u := c.rng.Float64()
	lo, hi := 0, len(c.cdf)-1
	for lo < hi {
		m := (lo + hi) / 2
		if c.cdf[m] < u {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return c.words[lo]
}

func (c *corpus) text(minWords, maxWords int) string {
	n := minWords + c.rng.IntN(maxWords-minWords+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word()
	}
	return strings.Join(ws, " ")
}

// mutate replaces, drops or inserts about frac of the words of text.
func (c *corpus) mutate(text string, frac float64) string {
	ws := strings.Fields(text)
	var out []string
	for _, w := range ws {
		if c.rng.Float64() >= frac {
			out = append(out, w)
			continue
		}
		switch c.rng.IntN(3) {
		case 0:
			out = append(out, c.word())
		case 1:
		case 2:
			out = append(out, w, c.word())
		}
	}
	return strings.Join(out, " ")
}
