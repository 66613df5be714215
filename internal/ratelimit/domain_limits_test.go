package ratelimit

import (
	"strings"
	"testing"
	"time"
)

// find is the limit naming domain, and whether there is one.
func find(limits []DomainLimit, domain string) (DomainLimit, bool) {
	for _, l := range limits {
		for _, d := range l.Domains {
			if d == domain {
				return l, true
			}
		}
	}
	return DomainLimit{}, false
}

func TestParseDomainLimits(t *testing.T) {
	t.Parallel()
	defaults := DefaultDomainLimits()
	for _, tc := range []struct {
		in    string
		check func(t *testing.T, got []DomainLimit)
	}{
		{"", func(t *testing.T, got []DomainLimit) {
			if len(got) != len(defaults) {
				t.Fatalf("%d groups, want the %d built-in", len(got), len(defaults))
			}
			for _, d := range []string{"gmail.com", "googlemail.com", "outlook.com", "hotmail.com", "live.com", "yahoo.com", "aol.com", "icloud.com"} {
				l, ok := find(got, d)
				if !ok || l.Rate <= 0 || l.Per != time.Second || l.Burst <= 0 || l.Concurrency <= 0 {
					t.Errorf("%s: %+v %v", d, l, ok)
				}
			}
			if g, _ := find(got, "googlemail.com"); g.Domains[0] != "gmail.com" {
				t.Errorf("googlemail.com is not in gmail.com's group: %v", g.Domains)
			}
		}},
		{"off", func(t *testing.T, got []DomainLimit) {
			if got != nil {
				t.Fatalf("off: %v", got)
			}
		}},
		{" OFF ", func(t *testing.T, got []DomainLimit) {
			if got != nil {
				t.Fatalf("OFF: %v", got)
			}
		}},
		// The brief's example: gmail.com leaves Google's built-in group
		// (googlemail.com keeps it), example.com is added.
		{"gmail.com=rate:50,conc:10;example.com=rate:5", func(t *testing.T, got []DomainLimit) {
			if l, _ := find(got, "gmail.com"); l.Rate != 50 || l.Per != time.Second || l.Burst != 50 || l.Concurrency != 10 || len(l.Domains) != 1 {
				t.Errorf("gmail.com: %+v", l)
			}
			if l, _ := find(got, "googlemail.com"); l.Rate != 1000 || len(l.Domains) != 1 || l.Domains[0] != "googlemail.com" {
				t.Errorf("googlemail.com: %+v", l)
			}
			if l, _ := find(got, "example.com"); l.Rate != 5 || l.Burst != 5 || l.Concurrency != 0 {
				t.Errorf("example.com: %+v", l)
			}
			if _, ok := find(got, "yahoo.com"); !ok {
				t.Error("the other built-in limits went")
			}
		}},
		{"defaults=off; Shop.Example , shop2.example = rate:600/m, burst:3 ; slow.example=hold;outlook.com=off", func(t *testing.T, got []DomainLimit) {
			if len(got) != 2 {
				t.Fatalf("%v, want shop.example's group and slow.example", got)
			}
			l, _ := find(got, "shop2.example")
			if l.Domains[0] != "shop.example" || l.Rate != 600 || l.Per != time.Minute || l.Burst != 3 || l.Emission() != 100*time.Millisecond {
				t.Errorf("shop: %+v", l)
			}
			if l, _ := find(got, "slow.example"); l.Rate != 0 || l.Concurrency != 0 || l.String() != "slow.example=hold" {
				t.Errorf("slow: %+v %s", l, l)
			}
		}},
		{"hotmail.com=off;yahoo.com=rate:30/h", func(t *testing.T, got []DomainLimit) {
			if _, ok := find(got, "hotmail.com"); ok {
				t.Error("hotmail.com still limited")
			}
			if l, _ := find(got, "outlook.com"); l.Rate != 500 {
				t.Errorf("outlook.com lost its limit: %+v", l)
			}
			if l, _ := find(got, "yahoo.com"); l.Rate != 30 || l.Per != time.Hour || l.Burst != 1 || l.Emission() != 2*time.Minute {
				t.Errorf("yahoo.com: %+v", l)
			}
			if l, _ := find(got, "aol.com"); l.Rate != 250 {
				t.Errorf("aol.com: %+v", l)
			}
		}},
		{"defaults=off", func(t *testing.T, got []DomainLimit) {
			if got != nil {
				t.Fatalf("nothing limited: %v", got)
			}
		}},
		{"example.com=conc:3;", func(t *testing.T, got []DomainLimit) {
			if l, _ := find(got, "example.com"); l.Concurrency != 3 || l.Rate != 0 || l.String() != "example.com=conc:3" {
				t.Errorf("%+v", l)
			}
		}},
	} {
		got, err := ParseDomainLimits(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		t.Run(tc.in, func(t *testing.T) { tc.check(t, got) })
	}
}

func TestParseDomainLimitsBad(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"gmail.com":                         "want domain=settings",
		"gmail.com=fast":                    `"fast" is not rate:N`,
		"gmail.com=rate:0":                  "rate:0 is not a number",
		"gmail.com=rate:5/d":                "rate:5/d is not a number",
		"gmail.com=rate:x":                  "rate:x",
		"gmail.com=conc:-1":                 "conc:-1",
		"gmail.com=burst:4":                 "burst needs a rate",
		"gmail.com=rate:5,rate:6":           "rate is given twice",
		"gmail.com=off,rate:5":              "off stands alone",
		"gmail.com=hold,conc:5":             "hold stands alone",
		"gmail.com=hold:3":                  "hold takes no value",
		"localhost=rate:5":                  `"localhost" is not a domain name`,
		"user@gmail.com=rate:5":             "is not a domain name",
		"a..b=rate:5":                       "is not a domain name",
		"-a.com=rate:5":                     "is not a domain name",
		"gmail.com=rate:5;GMAIL.com=conc:1": "gmail.com is named twice",
		"defaults=rate:5":                   "defaults takes only off",
		"defaults,a.com=off":                "defaults stands alone",
	} {
		_, err := ParseDomainLimits(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: the error takes more than a line: %v", in, err)
		}
	}
	// Every bad entry is named at once, on one line.
	_, err := ParseDomainLimits("a.com=rate:x;b.com=conc:1;c.com=nope")
	if err == nil || !strings.Contains(err.Error(), `"a.com=rate:x"`) || !strings.Contains(err.Error(), `"c.com=nope"`) ||
		strings.Contains(err.Error(), "b.com") {
		t.Errorf("%v", err)
	}
}
