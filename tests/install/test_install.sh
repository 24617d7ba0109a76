#!/bin/sh
# test_install: `cmake --install` into a temporary prefix; every promised file is there; the
# shared library libtributary-cache exports its tbc_ functions and nothing else, under the soname
# of its major version; a program compiled against the installed header and tributary-cache.pc
# alone links and, on a cache file made by the cache's own writer (make_cache), prints the same
# rows, tables and columns as the source of that file, and the version the header declares.
# Arguments: build dir, C compiler, extra compiler flags (sanitizers), the program's source,
# the make_cache program.
set -eu
build="$1"; cc="$2"; extra="$3"; src="$4"; make_cache="$5"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
fail() { echo "test_install: FAIL: $*"; cat "$tmp/install.log"; exit 1; }
[ -x "$tmp/prefix/bin/tributary" ] || fail "bin/tributary missing"
"$tmp/prefix/bin/tributary" --help >/dev/null || fail "installed tributary --help failed"
for f in include/tributary/tributary_cache.h share/doc/tributary/LICENSE share/doc/tributary/README.md \
         share/doc/tributary/configuration.md; do
  [ -f "$tmp/prefix/$f" ] || fail "$f missing"
done
lib="$(find "$tmp/prefix" -name 'libtributary-cache.so.*.*' | head -n 1)"
[ -n "$lib" ] || fail "libtributary-cache.so missing"
libdir="$(dirname "$lib")"
[ -e "$libdir/libtributary-cache.so" ] || fail "libtributary-cache.so (the link to build with) missing"
soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
[ "$soname" = "libtributary-cache.so.0" ] || fail "soname is '$soname', not libtributary-cache.so.0"
# only the public API: every defined dynamic symbol is tbc_* (or the version node)
others="$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v -e '^tbc_' -e '^TRIBUTARY_CACHE_0$' || true)"
[ -z "$others" ] || fail "the library exports more than tbc_*: $(echo "$others" | head -n 5 | tr '\n' ' ')"
[ "$(nm -D --defined-only "$lib" | grep -c ' T tbc_')" -ge 11 ] || fail "fewer than 11 tbc_ functions exported"
# no internal static library or header is installed any more
[ -z "$(find "$tmp/prefix" -name 'libtb_*' -o -name 'cache_read.h' -o -name 'tb_buf.h')" ] ||
  fail "internal libraries or headers installed"
pc="$(find "$tmp/prefix" -name tributary-cache.pc | head -n 1)"
[ -n "$pc" ] || fail "tributary-cache.pc missing"
export PKG_CONFIG_PATH="$(dirname "$pc")"
# shellcheck disable=SC2046,SC2086
"$cc" $extra -o "$tmp/reader" "$src" $(pkg-config --cflags --libs tributary-cache) || fail "cannot build against the install"
export LD_LIBRARY_PATH="$libdir"
out="$("$tmp/reader" "$tmp/missing.db" db.t '{"k":"a","n":1}' || true)"
case "$out" in
  *"error 3: "*"missing.db"*) ;;
  *) fail "reader on a missing cache file printed: $out" ;;
esac
"$make_cache" "$tmp/c.db" || fail "make_cache failed"
out="$("$tmp/reader" "$tmp/c.db" db.t '{"n":2,"k":"b"}')" || fail "reader failed: $out"
want='version 0.1.0 0.1.0
get {"k":"b","n":2,"v":20}
row {"k":"a","n":1,"v":10}
row {"k":"b","n":2,"v":20}
table db.t version 1 columns 3 key 2
column k varchar 1
column n int 2
column v int 0'
[ "$out" = "$want" ] || fail "reader printed:
$out
expected:
$want"
out="$("$tmp/reader" "$tmp/c.db" db.t '{"k":"c","n":3}' || true)"
case "$out" in
  *"error 1: "*) ;;
  *) fail "reader on a missing row printed: $out" ;;
esac
echo "test_install: PASS ($(wc -l <"$tmp/install.log") files installed)"
