#!/bin/sh
# test_install: `cmake --install` into a temporary prefix; every promised file is there; a
# program compiled against the installed header and tributary-cache.pc alone links and runs.
# Arguments: build dir, C compiler, extra compiler flags (sanitizers), the program's source.
set -eu
build="$1"; cc="$2"; extra="$3"; src="$4"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
fail() { echo "test_install: FAIL: $*"; cat "$tmp/install.log"; exit 1; }
[ -x "$tmp/prefix/bin/tributary" ] || fail "bin/tributary missing"
"$tmp/prefix/bin/tributary" --help >/dev/null || fail "installed tributary --help failed"
for f in include/tributary/cache_read.h include/tributary/tb_buf.h include/tributary/tb_error.h \
         share/doc/tributary/LICENSE share/doc/tributary/README.md share/doc/tributary/configuration.md; do
  [ -f "$tmp/prefix/$f" ] || fail "$f missing"
done
pc="$(find "$tmp/prefix" -name tributary-cache.pc | head -n 1)"
[ -n "$pc" ] || fail "tributary-cache.pc missing"
export PKG_CONFIG_PATH="$(dirname "$pc")"
# shellcheck disable=SC2046,SC2086
"$cc" $extra -o "$tmp/reader" "$src" $(pkg-config --cflags --libs tributary-cache) || fail "cannot build against the install"
out="$("$tmp/reader" "$tmp/missing.db" shop.t '{"id":1}' || true)"
case "$out" in
  "error "*"missing.db"*) ;;
  *) fail "reader on a missing cache file printed: $out" ;;
esac
echo "test_install: PASS ($(wc -l <"$tmp/install.log") files installed)"
