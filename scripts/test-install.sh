#!/usr/bin/env bash
# The install as a C user meets it (make test-install): installs LIBRARY into a temporary
# prefix, builds Examples/c/quickstart.c with nothing but pkg-config, runs it in an empty
# environment and checks its output and that no library comes from the Swift toolchain, then
# uninstalls and checks that nothing is left; then installs over a library already there and
# checks that the new one was renamed over it (a new inode), not written into it. The Swift
# runtime installed beside the library must be FoundationEssentials's, not Foundation's (no
# libFoundation.so, libFoundationInternationalization.so nor ICU's data, lib_FoundationICU.so),
# and at most RUNTIME_LIMIT_MIB (30) MiB in all.
#
#     scripts/test-install.sh LIBRARY VERSION RUNTIME-DIR
set -euo pipefail
library=${1:?library} version=${2:?version} runtime_dir=${3:?runtime dir}
cd "$(dirname "$0")/.."
repository=$PWD

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "test-install: $*" >&2; exit 1; }

scripts/install.sh install "$library" include/activerecord.h "$prefix" "$version" "$runtime_dir"

major=${version%%.*}
[ "$(readlink "$prefix/lib/libactiverecord.so")" = "libactiverecord.so.$major" ] || fail "libactiverecord.so does not link to .so.$major"
[ "$(readlink "$prefix/lib/libactiverecord.so.$major")" = "libactiverecord.so.$version" ] || fail "libactiverecord.so.$major does not link to .so.$version"
soname=$(readelf -d "$prefix/lib/libactiverecord.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libactiverecord.so.$major" ] || fail "SONAME is '$soname', expected libactiverecord.so.$major"
runpath=$(readelf -d "$prefix/lib/libactiverecord.so.$version" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
if tr ':' '\n' <<< "$runpath" | grep -q '^/'; then fail "the installed library searches an absolute path: $runpath"; fi

# The runtime beside the library: FoundationEssentials, not Foundation and its ICU data.
for heavy in libFoundation.so libFoundationInternationalization.so lib_FoundationICU.so; do
  [ ! -e "$prefix/lib/activerecord/$heavy" ] || fail "the install carries $heavy: something imports Foundation (use FoundationEssentials; bash scripts/check-seams.sh names the file)"
done
runtime_limit=$(( ${RUNTIME_LIMIT_MIB:-30} * 1048576 ))
runtime_bytes=$(cat "$prefix"/lib/activerecord/*.so | wc -c)
[ "$runtime_bytes" -le "$runtime_limit" ] \
  || fail "the installed Swift runtime is $runtime_bytes bytes, over ${RUNTIME_LIMIT_MIB:-30} MiB: $(cd "$prefix/lib/activerecord" && ls)"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion activerecord)" = "$version" ] || fail "pkg-config --modversion says $(pkg-config --modversion activerecord)"
mkdir "$work/app"
# shellcheck disable=SC2046  # pkg-config's words are separate arguments
cc -std=c99 -Wall -Wextra -Werror "$repository/Examples/c/quickstart.c" -o "$work/app/quickstart" $(pkg-config --cflags --libs activerecord)

# Every shared library the program loads: none from the toolchain, the Swift runtime from the prefix.
resolved=$(ldd "$work/app/quickstart")
if grep -q "$runtime_dir" <<< "$resolved"; then fail "the program loads from the toolchain ($runtime_dir):"$'\n'"$resolved"; fi
grep -q "libswiftCore.so => $prefix/lib/activerecord/libswiftCore.so" <<< "$resolved" \
  || fail "libswiftCore.so does not come from the prefix:"$'\n'"$resolved"
if grep -q "not found" <<< "$resolved"; then fail "a library is missing:"$'\n'"$resolved"; fi

(cd "$work/app" && env -i PATH=/usr/bin:/bin ./quickstart > quickstart.out)
diff -u Examples/c/quickstart.expected "$work/app/quickstart.out" || fail "the installed quickstart's output differs"

scripts/install.sh uninstall "$prefix"
[ ! -e "$prefix" ] || fail "uninstall left: $(find "$prefix" | head -20)"

# Installing over a library that is there already (put there by hand, with no manifest): the
# new one is a new file renamed over it, so a program running on the old one keeps it whole.
replaced=$work/replaced
mkdir -p "$replaced/lib"
cp include/activerecord.h "$replaced/lib/libactiverecord.so.$version"
before=$(stat -c %i "$replaced/lib/libactiverecord.so.$version")
scripts/install.sh install "$library" include/activerecord.h "$replaced" "$version" "$runtime_dir" > /dev/null
after=$(stat -c %i "$replaced/lib/libactiverecord.so.$version")
[ "$before" != "$after" ] || fail "install wrote over an existing library in place (inode $before kept)"
readelf -d "$replaced/lib/libactiverecord.so.$version" > /dev/null || fail "the replaced library is not the new one"
leftovers=$(find "$replaced" -name '*.installing-*')
[ -z "$leftovers" ] || fail "install left temporary files: $leftovers"
scripts/install.sh uninstall "$replaced" > /dev/null
echo "test-install: the installed Swift runtime is $runtime_bytes bytes ($((runtime_bytes / 1048576)) MiB, at most ${RUNTIME_LIMIT_MIB:-30}), without Foundation's ICU"
echo "test-install: installed, built with pkg-config, ran without the toolchain (output as expected), uninstalled without a trace;" \
  "over an existing library, renamed a new file over it"
