package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/internal/mail"
	"github.com/mailroom/mailroom/internal/testdb"
)

func envWith(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestAccountsCreate(t *testing.T) {
	t.Parallel()
	env := envWith(map[string]string{"DATABASE_URL": testdb.DSN(t)})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"accounts", "create", "--name", "Acme"}, env, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if !regexp.MustCompile(`^\{"user_id":\d+,"public_key":"pk_[A-Za-z0-9_-]{43}","secret_key":"sk_[A-Za-z0-9_-]{43}"\}\n$`).MatchString(line) {
		t.Fatalf("output %q", line)
	}
	var keys struct {
		UserID int64  `json:"user_id"`
		Public string `json:"public_key"`
		Secret string `json:"secret_key"`
	}
	json.Unmarshal([]byte(line), &keys)
	var name string
	var hash []byte
	if err := testdb.New(t).Pool.QueryRow(context.Background(), "SELECT name, secret_hash FROM accounts WHERE id = $1 AND public_key = $2",
		keys.UserID, keys.Public).Scan(&name, &hash); err != nil {
		t.Fatal(err)
	}
	if name != "Acme" || !bytes.Equal(hash, mail.SecretHash(keys.Secret)) || bytes.Contains(hash, []byte(keys.Secret)) {
		t.Fatalf("stored %q %x", name, hash)
	}
	acct, err := testdb.New(t).Authenticate(context.Background(), keys.Public, keys.Secret)
	if err != nil || acct.ID != keys.UserID {
		t.Fatalf("the printed keys do not authenticate: %v", err)
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	dsn := testdb.DSN(t)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"accounts", "create"}, map[string]string{"DATABASE_URL": dsn}, "accounts create: --name is required"},
		{[]string{"accounts", "list"}, map[string]string{"DATABASE_URL": dsn}, "usage: accounts create --name NAME"},
		{[]string{"frobnicate"}, map[string]string{"DATABASE_URL": dsn}, `unknown command "frobnicate"`},
		{[]string{"migrate"}, map[string]string{"DATABASE_URL": "mysql://x/y"}, "DATABASE_URL:"},
		{[]string{"migrate"}, map[string]string{"DATABASE_URL": dsn, "HTTP_ADDR": "nope"}, "HTTP_ADDR:"},
	} {
		err := run(context.Background(), tc.args, envWith(tc.env), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
	// migrate on a migrated database is a no-op that succeeds.
	if err := run(context.Background(), []string{"migrate"}, envWith(map[string]string{"DATABASE_URL": dsn}), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
}
