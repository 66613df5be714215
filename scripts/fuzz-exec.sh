#!/bin/sh
# go test -exec "$PWD/scripts/fuzz-exec.sh" -run '^$' -fuzz ... ./internal/httpapi/
#
# Runs a test binary under the name fuzz_<name>.test, so that testdb gives a
# long fuzzing run its own database (mailroom_test_fuzz_<package>) instead
# of dropping the one a `go test` of the same package uses meanwhile. The
# fuzzing workers are started under the same name. docs/fuzzing.md.
set -e
bin=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$bin" "$dir/fuzz_$(basename "$bin")"
"$dir/fuzz_$(basename "$bin")" "$@"
