#!/usr/bin/env python3
"""Type-checks Swift snippets against the library's built modules (`make check-snippets`).

* The README's first Swift example must compile as written (a user copies it first).
* Every Tests/Compile/*.swift must FAIL to compile, with the diagnostic its first line names
  (`// expect-error: ...`): options that would do nothing, and names that must not exist.

Usage: check-swift-snippets.py MODULES_DIR  (the debug build's Modules directory)
"""
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def typecheck(source: pathlib.Path, modules: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules,
         "-I", str(ROOT / "Sources" / "ActiveRecordSQLite"),
         "-I", str(ROOT / "Sources" / "ARSQLiteMutexes" / "include"), str(source)],
        capture_output=True, text=True)


def first_readme_example() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"```swift\n(.*?)```", readme, re.S)
    if not match:
        sys.exit("check-snippets: README.md has no ```swift block")
    return match.group(1)


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    modules = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as directory:
        example = pathlib.Path(directory) / "main.swift"
        example.write_text(first_readme_example())
        result = typecheck(example, modules)
        if result.returncode != 0:
            failures += 1
            print("check-snippets: README.md's first Swift example does not compile as written:")
            print(result.stderr)
        else:
            print("check-snippets: README.md's first Swift example compiles")
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
