// Package e2e holds mailroom's end-to-end tests: mails received by a real
// SMTP server, their links opened in a real headless Chromium against the
// real router and database. It has no code of its own.
package e2e
