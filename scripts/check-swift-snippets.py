#!/usr/bin/env python3
"""Type-checks Swift snippets against the library's built modules (`make check-snippets`).

Every Tests/Compile/*.swift must FAIL to compile, with the diagnostic its first line names
(`// expect-error: ...`): options that would do nothing, and names that must not exist.
(The documentation's code blocks, which must compile, are scripts/check-doc-snippets.py's.)

Usage: check-swift-snippets.py MODULES_DIR  (the debug build's Modules directory)
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def typecheck(source: pathlib.Path, modules: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules,
         "-I", str(ROOT / "Sources" / "ARSQLite3"),
         "-I", str(ROOT / "Sources" / "ARSQLiteMutexes" / "include"), str(source)],
        capture_output=True, text=True)


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    modules = sys.argv[1]
    failures = 0
    for snippet in sorted((ROOT / "Tests" / "Compile").glob("*.swift")):
        first = snippet.read_text().splitlines()[0]
        expected = first.removeprefix("// expect-error:").strip()
        if expected == first:
            failures += 1
            print(f"check-snippets: {snippet.name} does not start with '// expect-error: <diagnostic>'")
            continue
        result = typecheck(snippet, modules)
        if result.returncode == 0:
            failures += 1
            print(f"check-snippets: {snippet.name} compiles, but must fail with: {expected}")
        elif f"error: {expected}" not in result.stderr:
            failures += 1
            print(f"check-snippets: {snippet.name} fails, but not with: {expected}\n{result.stderr}")
        else:
            print(f"check-snippets: {snippet.name} fails as it must: {expected}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
