#!/usr/bin/env bash
# A user's package depending on this one the way the README says (make package-graph, part of
# make test):
#  1. clones the checkout into a temporary directory and tags the clone VERSION (no other tag):
#     the commit checked out, plus the uncommitted changes, if any, as one commit on top, so that
#     a run during development tests what is on disk;
#  2. resolves the Package.swift blocks of README.md and the Getting started article (the ones
#     marked `<!-- snippet: manifest -->`), their `https://github.com/<owner>/swift-activerecord`
#     pointed at the clone's file:// URL: each resolves to VERSION, with the product names it uses;
#  3. builds Tests/PackageGraph, a user's package with its own targets named Quickstart and
#     CSQLite (target names are unique across a package graph) that depends on the clone by URL,
#     `from: VERSION`: its Quickstart (a save and a fetch, timed and traced by the metrics and
#     tracing backends it bootstraps, and ActiveRecordPostgreSQL linked) and the C library
#     `activerecord`, in release with make install's flags (BUILD-FLAGS), and runs Quickstart;
#  4. runs scripts/test-install.sh on that libactiverecord.so, so that make test builds the
#     release configuration once.
# The temporary directory is removed whatever happens (an interrupt included).
#
#     scripts/test-package-graph.sh VERSION RUNTIME-DIR BUILD-FLAGS...
set -euo pipefail
version=${1:?version} runtime_dir=${2:?runtime dir}
shift 2
swift=${SWIFT:-swift}
cd "$(dirname "$0")/.."
repository=$PWD
placeholder='https://github.com/<owner>/swift-activerecord'
fail() { echo "package-graph: $*" >&2; exit 1; }

git -C "$repository" rev-parse --is-inside-work-tree > /dev/null 2>&1 \
  || fail "$repository is not a git checkout: this test clones it and tags the clone (git clone the repository, or run the other tests without it)"

work=$(mktemp -d /tmp/activerecord-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
# SIGKILL runs no trap: a guard in a session of its own removes the directory once this script is gone.
setsid scripts/guard.sh $$ rm -rf "$work" </dev/null >/dev/null 2>&1 &
# SwiftPM's lock files and other temporary files go there too, not into /tmp.
mkdir "$work/tmp" && export TMPDIR=$work/tmp

# 1. The clone, named swift-activerecord: SwiftPM names a URL dependency by its last path component.
clone=$work/swift-activerecord
git clone -q "$repository" "$clone"
git -C "$clone" checkout -q --detach "$(git rev-parse HEAD)"
if [ -n "$(git status --porcelain)" ]; then
  # What is on disk: every file git tracks or would track, deleted ones gone, as one commit.
  git -C "$clone" rm -rq --cached . && find "$clone" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
    [ -e "$file" ] || continue
    mkdir -p "$clone/$(dirname "$file")" && cp -P "$file" "$clone/$file"
  done
  git -C "$clone" add -A
  git -C "$clone" -c user.name=package-graph -c user.email=package-graph@localhost commit -qm "uncommitted changes" --allow-empty
  echo "package-graph: the checkout has uncommitted changes: the clone has them as a commit on top of HEAD"
fi
git -C "$clone" for-each-ref --format="delete %(refname)" refs/tags | git -C "$clone" update-ref --stdin
git -C "$clone" tag "$version"
url=file://$clone

# 2. The documentation's Package.swift blocks resolve against the tagged clone.
manifests=0
for page in README.md Sources/ActiveRecord/ActiveRecord.docc/GettingStarted.md; do
  python3 - "$page" "$work/docs" <<'EXTRACT'
import pathlib, re, sys
page, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
lines = page.read_text().split("\n")
for index, line in enumerate(lines):
    if re.match(r"^<!--\s*snippet\s*:\s*manifest\s*-->\s*$", line):
        start = index + 1
        while not lines[start].strip():
            start += 1
        end = lines.index("```", start + 1)
        folder = out / f"{page.stem}-{start + 1}"
        folder.mkdir(parents=True)
        (folder / "Package.swift").write_text("\n".join(lines[start + 1:end]) + "\n")
        (folder / "WHERE").write_text(f"{page}:{start + 2}")
EXTRACT
done
for folder in "$work"/docs/*/; do
  [ -d "$folder" ] || continue
  where=$(cat "$folder/WHERE")
  grep -qF "$placeholder\", from: \"$version\")" "$folder/Package.swift" \
    || fail "$where: the Package.swift block does not depend on $placeholder from: \"$version\""
  sed -i "s|$placeholder|$url|" "$folder/Package.swift"
  for target in $(grep -oE '\.(executableTarget|target)\(name: "[^"]+"' "$folder/Package.swift" | sed 's/.*"\(.*\)"/\1/'); do
    mkdir -p "$folder/Sources/$target" && touch "$folder/Sources/$target/main.swift"
  done
  dependencies=$(cd "$folder" && "$swift" package --manifest-cache local show-dependencies 2>&1) \
    || fail "$where: the Package.swift block does not resolve:"$'\n'"$dependencies"
  grep -qF "swift-activerecord<$clone@$version>" <<< "$dependencies" \
    || fail "$where: swift-activerecord did not resolve to $version:"$'\n'"$dependencies"
  manifests=$((manifests + 1))
done
[ "$manifests" -ge 2 ] || fail "expected a Package.swift block (<!-- snippet: manifest -->) in README.md and in GettingStarted.md, found $manifests"
echo "package-graph: $manifests Package.swift blocks of the documentation resolve to the clone tagged $version"

# 3. The user's package, by URL from the tagged clone, in release.
consumer=$work/consumer
mkdir "$consumer"
cp -R Tests/PackageGraph/Package.swift Tests/PackageGraph/Sources "$consumer/"
grep -qF ".package(url: \"$placeholder\", from: \"$version\")" "$consumer/Package.swift" \
  || fail "Tests/PackageGraph/Package.swift does not depend on $placeholder from: \"$version\""
sed -i "s|$placeholder|$url|" "$consumer/Package.swift"
cd "$consumer"
# Quietly (make test runs this beside its debug build): the output only when a build fails.
started=$SECONDS
for product in Quickstart activerecord; do
  "$swift" build --manifest-cache local "$@" --product "$product" > "$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; fail "the consumer's build of $product failed (above)"; }
done
echo "package-graph: the consumer and libactiverecord.so built in release in $((SECONDS - started)) s"
"$swift" package --manifest-cache local show-dependencies 2>&1 | grep -qF "swift-activerecord<$clone@$version>" \
  || fail "the consumer's swift-activerecord is not the clone at $version"
bin=$("$swift" build --manifest-cache local "$@" --show-bin-path)
expected="saved and fetched: Swift https://swift.org (CSQLite says 42)
timed selects: 2, spans: INSERT Bookmark, SELECT Bookmark
postgres: postgresql://app@db.example/app"
# make install's flags leave the toolchain's runtime out of the programs' search path.
output=$(LD_LIBRARY_PATH=$runtime_dir "$bin/Quickstart") \
  || { echo "$output" >&2; fail "the consumer's Quickstart failed (its output above)"; }
echo "$output"
[ "$output" = "$expected" ] || fail "Quickstart printed the above, expected:"$'\n'"$expected"
echo "package-graph: a user's package depending on $url from: \"$version\" built (release), saved and fetched"

# 4. make install's checks on the release library just built.
cd "$repository"
scripts/test-install.sh "$bin/libactiverecord.so" "$version" "$runtime_dir"
