package config

import (
	"errors"
	"testing"
)

func TestParsePriceReadsAnEntryAndRefusesWhatIsNoPrice(t *testing.T) {
	model, p, err := ParsePrice(" my-model = 3/ 15 /0.3")
	if err != nil || model != "my-model" || p != (Price{Input: 3, Output: 15, CacheRead: 0.3}) {
		t.Fatalf("ParsePrice = %q %+v %v", model, p, err)
	}
	for _, bad := range []string{"my-model", "=1,2", "m=1", "m=1/2/3/4/5", "m=1/x", "m=-1/2", "m=NaN/2", "m=Inf/1"} {
		if _, _, err := ParsePrice(bad); !errors.Is(err, ErrBadPrice) {
			t.Errorf("ParsePrice(%q) = %v; want ErrBadPrice", bad, err)
		}
	}
	c := Defaults()
	c.IM.Prices = []string{"m=1"}
	if err := c.Validate(); err == nil {
		t.Error("a bad im.prices entry passed validation")
	}
}
