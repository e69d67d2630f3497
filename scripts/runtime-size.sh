#!/usr/bin/env bash
# What the Swift runtime costs a program that uses the library, in bytes (the figures the
# README quotes):
#   1. the C library's install (make install): the Swift runtime libraries copied beside it,
#      under PREFIX/lib/activerecord, each and in total;
#   2. the Swift quickstart (Examples/Quickstart) in release: the Swift shared libraries it
#      loads from the toolchain (ldd), each and in total;
#   3. the same program linked with --static-swift-stdlib (its own build folder,
#      .build-static): the binary's size, and stripped.
# The first run builds the three release configurations (minutes); later runs only link.
#
#     scripts/runtime-size.sh [--no-static]
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
static=yes
[ "${1:-}" != --no-static ] || static=no

runtime_dir=$($swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
# list FILE...: each file's size and name, then the total
list() {
  local total=0 size file
  for file in "$@"; do
    size=$(stat -L -c %s "$file")
    total=$((total + size))
    printf '    %10d  %s\n' "$size" "$(basename "$file")"
  done
  printf '    %10d  total (%s)\n' "$total" "$(mib "$total")"
}

make --no-print-directory install-build > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
DESTDIR=$work/stage make --no-print-directory install PREFIX=/prefix > /dev/null
echo "runtime-size: the installed C library's Swift runtime (PREFIX/lib/activerecord), bytes:"
list "$work"/stage/prefix/lib/activerecord/*.so
printf '    %10d  libactiverecord.so itself (stripped)\n' "$(stat -L -c %s "$work"/stage/prefix/lib/libactiverecord.so)"

$swift build -c release --product ActiveRecordQuickstart > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
quickstart=$($swift build -c release --show-bin-path)/ActiveRecordQuickstart
mapfile -t loaded < <(ldd "$quickstart" | awk -v dir="$runtime_dir/" 'index($3, dir) == 1 { print $3 }')
echo "runtime-size: the Swift quickstart in release, the Swift libraries it loads (ldd), bytes:"
list "${loaded[@]}"
printf '    %10d  the program itself\n' "$(stat -c %s "$quickstart")"

if [ $static = yes ]; then
  $swift build -c release --product ActiveRecordQuickstart --static-swift-stdlib --scratch-path .build-static \
    > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
  binary=$($swift build -c release --scratch-path .build-static --show-bin-path)/ActiveRecordQuickstart
  strip -o "$work/stripped" "$binary"
  size=$(stat -c %s "$binary") stripped=$(stat -c %s "$work/stripped")
  echo "runtime-size: the Swift quickstart in release with --static-swift-stdlib:"
  printf '    %10d  the binary (%s); stripped %d (%s)\n' "$size" "$(mib "$size")" "$stripped" "$(mib "$stripped")"
fi
