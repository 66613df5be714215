package e2e_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The API's page, /docs, opened in Chromium: it fetches /api/openapi.json
// under its own strict CSP, lists the operations with their parameters,
// bodies and responses, filters them, and writes nothing to the console.
func TestDocsPageInBrowser(t *testing.T) {
	t.Parallel()
	tab := browser(t)
	_, srv := site(t)

	// Listen sees each event before the reply to any later command, so
	// once the last step has answered, every message is here.
	said := watchConsole(t, tab)

	run(t, tab, chromedp.Navigate(srv.URL+"/docs"), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	op := "#op-createAutomation"
	if got := text(t, tab, chromedp.CSS(op+" h3")); !strings.HasPrefix(got, "POST") || !strings.Contains(got, "/api/automations/create") ||
		!strings.Contains(got, "Create an automation") {
		t.Errorf("operation heading %q", got)
	}
	fields := value(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#op-createAutomation .body > .fields > tr > td:first-child > code")].map(e => e.textContent)`))
	if strings.Join(fields, ",") != "automation_name,automation_for,type,unsubscribe_group_id,exit_criteria" {
		t.Errorf("request fields %q", fields)
	}
	statuses := value(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#op-createAutomation .status")].map(e => e.textContent)`))
	if strings.Join(statuses, ",") != "200,401,422,429,500" {
		t.Errorf("responses %q", statuses)
	}
	if got := text(t, tab, chromedp.CSS("#loading")); !strings.HasSuffix(got, "operations; OpenAPI 3.1.0.") {
		t.Errorf("summary %q", got)
	}
	if got := text(t, tab, chromedp.CSS("#op-deleteSegment")); !strings.Contains(got, `"errors": "Deleted Successfully"`) &&
		!strings.Contains(got, "Deleted Successfully") {
		t.Errorf("segment delete does not show its answer: %q", got)
	}

	// The filter hides every other operation.
	run(t, tab, chromedp.SendKeys(chromedp.CSS("#filter"), "automations/create"))
	visible := value(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".op:not([hidden])")].map(e => e.id)`))
	if strings.Join(visible, ",") != "op-createAutomation" {
		t.Errorf("filtered: %q", visible)
	}

	if lines := said(); len(lines) > 0 {
		t.Errorf("console:\n%s", strings.Join(lines, "\n"))
	}
}
