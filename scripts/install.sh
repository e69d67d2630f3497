#!/usr/bin/env bash
# Installs the C library like any C library, or removes what an install put there.
#
#     scripts/install.sh install   LIBRARY HEADER PREFIX VERSION RUNTIME-DIR   (make install)
#     scripts/install.sh uninstall PREFIX                            (make uninstall)
#
# `install` copies, under $DESTDIR$PREFIX:
#   lib/libactiverecord.so.VERSION         the release library (SONAME libactiverecord.so.MAJOR,
#                                          RUNPATH $ORIGIN/activerecord), stripped
#   lib/libactiverecord.so.MAJOR, lib/libactiverecord.so   the usual symbolic links
#   lib/activerecord/*.so                  the Swift runtime libraries it needs, from
#                                          RUNTIME-DIR (the runtime library path of the
#                                          toolchain that built it: `swift -print-target-info`):
#                                          a program's machine needs no Swift toolchain
#   include/activerecord.h
#   lib/pkgconfig/activerecord.pc          `pkg-config --cflags --libs activerecord`
#   share/activerecord/installed-files     this list, which `uninstall` removes, exactly (with
#                                          the directories the install made; under DESTDIR, a
#                                          staging tree, only the files)
# LIBRARY must be built with -no-toolchain-stdlib-rpath, -soname libactiverecord.so.MAJOR and
# -rpath '$ORIGIN/activerecord' (the Makefile's install-build does).
set -euo pipefail

manifest_path=share/activerecord/installed-files

case ${1:-} in
install)
  library=${2:?library} header=${3:?header} prefix=${4:?prefix} version=${5:?version} runtime_dir=${6:?runtime dir}
  major=${version%%.*}
  case $prefix in
  /*) ;;
  *) echo "install: PREFIX must be an absolute path (it is written into activerecord.pc): '$prefix'" >&2; exit 1 ;;
  esac
  case $prefix in
  *[[:space:]]*)
    echo "install: PREFIX '$prefix' contains white space, which pkg-config's output cannot carry; choose another" >&2
    exit 1 ;;
  esac
  root="${DESTDIR:-}$prefix"
  [ -f "$runtime_dir/libswiftCore.so" ] || { echo "install: no Swift runtime libraries at $runtime_dir" >&2; exit 1; }
  [ ! -e "$root/$manifest_path" ] || {
    echo "install: $root already has an installed activerecord; run make uninstall PREFIX=$prefix first" >&2
    exit 1
  }

  installed=() created=()
  [ -n "${DESTDIR:-}" ] || [ -d "$root" ] || created=(.)
  # Records the directories of RELATIVE-PATH that do not exist yet (uninstall removes those,
  # deepest first, and no directory that was there before).
  make_directories() {
    local directory missing=()
    directory=$(dirname "$1")
    while [ "$directory" != . ] && [ ! -d "$root/$directory" ]; do
      missing=("$directory" "${missing[@]}")
      directory=$(dirname "$directory")
    done
    [ ${#missing[@]} -eq 0 ] || mkdir -p "$root/$(dirname "$1")"
    # Under DESTDIR the tree is staged for elsewhere, where these directories may exist
    # already: only the files are listed, so an uninstall there never removes a directory.
    [ ${#missing[@]} -eq 0 ] || [ -n "${DESTDIR:-}" ] || created+=("${missing[@]}")
  }
  # Each file and link is made beside its final name and renamed over it (rename(2) is atomic):
  # a program running on a library this replaces keeps the old file whole, where writing
  # over it in place would change the code under the running program (a crash), and a
  # program starting meanwhile finds either the old file or the new one, never none.
  put() { # put SOURCE RELATIVE-PATH MODE [strip]
    make_directories "$2"
    local temporary="$root/$2.installing-$$"
    { install -m "$3" "$1" "$temporary" && { [ "${4:-}" != strip ] || strip --strip-unneeded "$temporary"; } \
      && mv -fT "$temporary" "$root/$2"; } || { rm -f "$temporary"; echo "install: could not install $root/$2" >&2; exit 1; }
    installed+=("$2")
  }
  link() { # link TARGET RELATIVE-PATH
    local temporary="$root/$2.installing-$$"
    { ln -sfn "$1" "$temporary" && mv -fT "$temporary" "$root/$2"; } \
      || { rm -f "$temporary"; echo "install: could not link $root/$2" >&2; exit 1; }
    installed+=("$2")
  }

  put "$library" "lib/libactiverecord.so.$version" 755 strip
  link "libactiverecord.so.$version" "lib/libactiverecord.so.$major"
  link "libactiverecord.so.$major" "lib/libactiverecord.so"

  # The Swift runtime libraries the library needs, directly or through each other: each
  # NEEDED name that the toolchain's runtime directory has (the system's own, such as libc,
  # sqlite3 and libpq, stay the system's).
  pending=("$library") seen=" "
  while [ ${#pending[@]} -gt 0 ]; do
    current=${pending[0]}
    pending=("${pending[@]:1}")
    for needed in $(readelf -d "$current" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      case $seen in *" $needed "*) continue ;; esac
      seen="$seen$needed "
      if [ -f "$runtime_dir/$needed" ]; then
        put "$runtime_dir/$needed" "lib/activerecord/$needed" 644
        pending+=("$runtime_dir/$needed")
      fi
    done
  done

  put "$header" include/activerecord.h 644
  pc=$(mktemp)
  cat > "$pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: activerecord
Description: An ActiveRecord ORM over SQLite (and PostgreSQL), for C programs
Version: $version
Libs: -L\${libdir} -lactiverecord -Wl,-rpath,\${libdir}
Cflags: -I\${includedir}
EOF
  put "$pc" lib/pkgconfig/activerecord.pc 644
  rm -f "$pc"

  make_directories "$manifest_path"
  installed+=("$manifest_path")
  # Files first, then the directories the install made, deepest last (uninstall reverses them).
  { printf '%s\n' "${installed[@]}"; [ ${#created[@]} -eq 0 ] || printf '%s/\n' "${created[@]}"; } > "$root/$manifest_path"
  library_bytes=$(stat -c %s "$root/lib/libactiverecord.so.$version")
  runtime_bytes=$(cat "$root"/lib/activerecord/*.so | wc -c)
  echo "installed activerecord $version in $root: ${#installed[@]} files;" \
    "the library $((library_bytes / 1024)) KiB, the Swift runtime beside it $((runtime_bytes / 1048576)) MiB"
  ;;
uninstall)
  prefix=${2:?prefix}
  root="${DESTDIR:-}$prefix"
  [ -f "$root/$manifest_path" ] || { echo "uninstall: no activerecord installed in $root" >&2; exit 1; }
  mapfile -t entries < "$root/$manifest_path"
  files=0 directories=()
  for entry in "${entries[@]}"; do
    case $entry in
    "") ;;
    */) directories=("${entry%/}" "${directories[@]}") ;;
    *) rm -f "$root/$entry"; files=$((files + 1)) ;;
    esac
  done
  # The directories the install made, deepest first; one that now holds something else stays.
  for directory in "${directories[@]}"; do
    if [ "$directory" = . ]; then rmdir "$root" 2>/dev/null || true; else rmdir "$root/$directory" 2>/dev/null || true; fi
  done
  echo "removed activerecord from $root: $files files, ${#directories[@]} directories it had made"
  ;;
*)
  echo "usage: install.sh install LIBRARY HEADER PREFIX VERSION | uninstall PREFIX" >&2
  exit 2
  ;;
esac
