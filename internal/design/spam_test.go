package design_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/design"
	"github.com/mailroom/mailroom/internal/dkim"
	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/render"
)

// spamSubjects are a send's subject and preheader for each template, as
// an author would write them.
var spamSubjects = map[string][2]string{
	"blank":              {"A note from ((sender_name))", "A few lines from the team"},
	"newsletter":         {"The Monthly Digest: five habits of teams that ship every week", "Product updates, a story from Lisbon and a live Q&A"},
	"announcement":       {"Smart Scheduling is here", "Your campaigns can now go out when each contact reads mail"},
	"welcome":            {"Welcome to ((sender_name)), ((first_name))", "Three quick steps for your first week"},
	"order-confirmation": {"Your order #10428 is confirmed", "We are getting it ready and will let you know when it ships"},
}

// Every built-in template, filled for a sample contact and made into a
// mail the way the delivery engine makes one (jobs: Links.Fill and Pixel
// for the recipient, render.Compile, NewForm with the send's options and
// tracked links, BuildChecked, the DKIM signature), scores at most 0 with
// SpamAssassin's local rules (no network tests), in each of spamVariants.
// One spamassassin run scores all the mails: starting it costs a second
// or more, scoring one a fraction of that.
func TestDesignSpamAssassin(t *testing.T) {
	sa, err := exec.LookPath("spamassassin")
	if err != nil {
		t.Skip("spamassassin is not on PATH: install it (Debian: apt-get install spamassassin; .ci/run does) to score the built-in templates")
	}
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := dkim.NewKey("northwind.example", "mr1", priv)
	links := mail.Links{Base: "https://mail.northwind.example", Signer: mail.NewTokenSigner(bytes.Repeat([]byte("k"), 32))}
	sender := &mail.Sender{FromName: "Northwind Studio", FromEmail: "news@northwind.example",
		ReplyTo: "hello@northwind.example", Address: "12 Harbour Street", City: "Bristol", Country: "United Kingdom"}
	type sent struct {
		name, path string
		msg        []byte
	}
	var mails []sent
	for _, tp := range design.Templates() {
		subject, ok := spamSubjects[slug(tp)]
		if !ok {
			t.Fatalf("%s: no sample subject in spamSubjects", tp.Name)
		}
		for _, v := range spamVariants {
			m := sent{name: slug(tp) + " " + v.name}
			m.msg = spamMail(t, tp, subject, v, int64(1001+len(mails)), links, sender, key)
			m.path = filepath.Join(dir, strconv.Itoa(len(mails))+".eml")
			if err := os.WriteFile(m.path, m.msg, 0o644); err != nil {
				t.Fatal(err)
			}
			mails = append(mails, m)
		}
	}
	var paths []string
	for _, m := range mails {
		paths = append(paths, m.path)
	}
	outs := spamAssassin(t, sa, dir, paths)
	for i, m := range mails {
		id := messageIDRE.Find(m.msg)
		if id == nil || !bytes.Contains(outs[i], id) {
			t.Fatalf("%s: spamassassin's answer %d is not about this mail (%s)", m.name, i, id)
		}
		score, hits, report := spamReport(t, outs[i])
		t.Logf("%s: score %.1f: %s", m.name, score, strings.Join(hits, " "))
		if score > 0 {
			t.Errorf("%s: SpamAssassin scores %.1f: %s\n%s", m.name, score, strings.Join(hits, " "), report)
		}
	}
}

// messageIDRE is a mail's Message-ID field, which tells spamassassin's
// answers apart.
var messageIDRE = regexp.MustCompile(`(?m)^Message-ID: [^\r\n]*`)

// spamVariant says which of a send's options a mail is built with.
type spamVariant struct {
	name                    string
	preheader, pixel, track bool // track: tracked links, List-Unsubscribe mailto, DKIM
}

// spamVariants are every option on, none, and the open pixel alone: the
// shortest mail with an image, which rules such as HTML_IMAGE_ONLY_* (an
// image in less than 3200 bytes of HTML) score.
var spamVariants = []spamVariant{
	{name: "tracked", preheader: true, pixel: true, track: true},
	{name: "plain"},
	{name: "pixel", pixel: true},
}

// spamMail is the mail of delivery id of send 42 from template tp for a
// sample contact, as jobs builds it, with v's options.
func spamMail(t *testing.T, tp design.Template, subject [2]string, v spamVariant, id int64, links mail.Links, s *mail.Sender, key *dkim.Key) []byte {
	const sendID = 42
	r := &mail.Recipient{ContactID: 7, Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace",
		Country: "United Kingdom", City: "London", Custom: map[string]string{"company_name": "Analytical Engines Ltd"}}
	links.Fill(r, mail.UnsubscribeToken{UserID: 1, Email: r.Email, SendID: sendID})
	preheader := ""
	if v.preheader {
		preheader = subject[1]
	}
	if v.pixel {
		r.Tokens.OpenPixelURL = string(links.Pixel(nil, "l7Yp2q", sendID, id))
	}
	tmpl, err := render.Compile(subject[0], preheader, tp.HTML)
	if err != nil {
		t.Fatal(err)
	}
	opts := render.FormOptions{SendID: sendID, Signer: links.Signer}
	if v.track {
		opts.UnsubscribeMailto = "unsubscribe@mail.northwind.example"
		// As jobs numbers them: the links to mailroom's own pages stay as
		// written, the others in the order the send's link table has them.
		for _, u := range tmpl.Links() {
			n := -1
			if links.Tracks(u) {
				n = len(opts.LinkNumbers)
			}
			opts.LinkNumbers = append(opts.LinkNumbers, n)
		}
		opts.Clicks = links.Clicks(sendID)
	}
	var b render.Buffer
	msg, err := render.NewForm(tmpl, s, opts).BuildChecked(nil, &b, r, id)
	if err != nil {
		t.Fatal(err)
	}
	if v.track {
		if msg, err = key.Sign(nil, msg); err != nil {
			t.Fatal(err)
		}
	}
	return msg
}

// spamReportRE is the start of the report spamassassin's test mode
// appends to each mail.
var spamReportRE = regexp.MustCompile(`(?m)^Content analysis details:\s+\((-?[0-9.]+) points`)

// spamAssassin scores the mails at paths in one run, local rules only,
// Bayes off, with dir as its home (so no run learns from another), and
// answers its output for each: the mail with the report after it.
func spamAssassin(t *testing.T, sa, dir string, paths []string) [][]byte {
	prefs := filepath.Join(dir, "user_prefs")
	if err := os.WriteFile(prefs, []byte("use_bayes 0\nbayes_auto_learn 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sa, append([]string{"--local", "--test-mode", "--prefspath=" + prefs}, paths...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spamassassin: %v\n%s", err, stderr.Bytes())
	}
	// Each answer ends with its report, whose rule list ends at a blank line.
	var outs [][]byte
	for len(outs) < len(paths) {
		loc := spamReportRE.FindIndex(out)
		if loc == nil {
			t.Fatalf("spamassassin answered %d mails of %d:\n%s\n%s", len(outs), len(paths), out, stderr.Bytes())
		}
		end := bytes.Index(out[loc[1]:], []byte("\n---- "))
		if end >= 0 {
			end += loc[1] + 1
			if blank := bytes.Index(out[end:], []byte("\n\n")); blank >= 0 {
				end += blank + 2
			} else {
				end = len(out)
			}
		} else {
			end = len(out)
		}
		outs = append(outs, out[:end])
		out = out[end:]
	}
	return outs
}

// spamRuleRE is a rule's line in a report: its points and name.
var spamRuleRE = regexp.MustCompile(`(?m)^\s*(-?[0-9.]+) ([A-Z0-9_]+)\s`)

// spamReport reads the report at the end of one answer: the score, the
// rules hit ("NAME=points") and the report's text.
func spamReport(t *testing.T, out []byte) (float64, []string, string) {
	loc := spamReportRE.FindSubmatchIndex(out)
	if loc == nil {
		t.Fatalf("no report in:\n%s", out)
	}
	report := string(out[loc[0]:])
	score, err := strconv.ParseFloat(string(out[loc[2]:loc[3]]), 64)
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, m := range spamRuleRE.FindAllStringSubmatch(report, -1) {
		hits = append(hits, m[2]+"="+m[1])
	}
	if len(hits) == 0 {
		t.Fatalf("no rule hit in the report, not even HTML_MESSAGE:\n%s", report)
	}
	return score, hits, report
}
