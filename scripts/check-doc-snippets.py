#!/usr/bin/env python3
"""Compiles every ```swift and ```c block of README.md and the DocC articles (`make check-doc-snippets`).

The documentation must show the API as it is: each Swift block is type-checked against the
debug build's modules, each C block against include/activerecord.h. Errors point at the
Markdown file and line (#sourceLocation, #line).

How a Swift block is compiled (the markers are HTML comments on the line before the fence;
GitHub and DocC show nothing of them):

* No marker: a fragment. Its top-level declarations (class, struct, enum, extension, func,
  import, ...) go to file scope; its other lines become the body of a function of their own
  (`throws`, and `async` when the block awaits), so that two blocks may both say `let users`.
  Each fragment imports ActiveRecord and Foundation. All the fragments of one Markdown file
  are one module, compiled together with the file's prelude, Tests/DocSnippets/<Name>.swift
  (README.md: README.swift) when there is one: the models and values the prose assumes
  (`db`, `john`, a `Bookmark` model). A model a block declares is seen by the other blocks of
  its file, as the reader sees it.
* `<!-- snippet: prelude NAME -->`: the block is compiled with Tests/DocSnippets/NAME.swift
  instead, in a module of its own with every other block of the file naming the same prelude
  (for a block whose models differ from the rest of its page).
* `<!-- snippet: main -->`: a complete program, compiled alone as main.swift exactly as
  written (nothing imported for it): what a reader copies first.
* `<!-- snippet: manifest -->`: a user's Package.swift, not compiled here: `make package-graph`
  (scripts/test-package-graph.sh) resolves it against a clone of the checkout tagged VERSION.
* `<!-- no-compile: REASON -->`: not compiled (a block that shows an error on purpose);
  the reason is required. Keep these rare.

A prelude's first lines may name more modules its blocks import, as
`// snippet-imports: Logging ActiveRecordPostgreSQL`.

A C block is compiled with the strict C flags (-std=c99 -Wall -Wextra -Werror -pedantic,
-fsyntax-only) against include/activerecord.h; a block without `main` is wrapped in one, its
`#include` lines kept at file scope. The same markers apply (`no-compile` only makes sense).

Usage: check-doc-snippets.py MODULES_DIR  (the debug build's Modules directory)
"""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "Sources").glob("*/*.docc/*.md"))]
PRELUDES = ROOT / "Tests" / "DocSnippets"
FENCE = re.compile(r"^```(\w+)\s*$")
MARKER = re.compile(r"^<!--\s*(snippet|no-compile)\s*:\s*(.*?)\s*-->\s*$")
DECLARATION = re.compile(
    r"^(@\w+(\([^)]*\))?\s+)*((public|package|private|fileprivate|internal|final|open|"
    r"nonisolated|indirect)\s+)*(import|class|struct|enum|extension|protocol|func|actor|typealias)\b")
FRAGMENT_IMPORTS = ["ActiveRecord", "Foundation"]


class Block:
    def __init__(self, path, language, line, text, marker):
        self.path, self.language, self.line, self.text, self.marker = path, language, line, text, marker

    @property
    def where(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path):
    """Every fenced block of a Markdown file, with the marker before it (or None)."""
    lines = path.read_text().split("\n")
    blocks, index = [], 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        start = index + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        previous = index - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        marker = MARKER.match(lines[previous]) if previous >= 0 else None
        blocks.append(Block(path, fence.group(1), start + 1, "\n".join(lines[start:end]),
                            (marker.group(1), marker.group(2)) if marker else None))
        index = end + 1
    return blocks


def brace_delta(line):
    """{ minus } in a line of Swift or C, outside string literals and comments."""
    delta, index, quote = 0, 0, None
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif line.startswith("//", index):
            break
        elif char in "\"'":
            quote = char
        elif char == "{":
            delta += 1
        elif char == "}":
            delta -= 1
        index += 1
    return delta


def split_fragment(text):
    """(declarations, statements): lists of (first line offset, lines) chunks of a block."""
    declarations, statements = [], []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        target = declarations if DECLARATION.match(lines[index]) else statements
        start, depth = index, brace_delta(lines[index])
        index += 1
        while depth > 0 and index < len(lines):
            depth += brace_delta(lines[index])
            index += 1
        if target and target[-1][0] + len(target[-1][1]) == start:
            target[-1][1].extend(lines[start:index])
        else:
            target.append((start, lines[start:index]))
    return declarations, statements


def location(block, offset):
    return f'#sourceLocation(file: "{block.path.relative_to(ROOT)}", line: {block.line + offset})'


def fragment_source(block, number, imports):
    declarations, statements = split_fragment(block.text)
    out = [f"import {module}" for module in imports]
    for offset, lines in declarations:
        out += [location(block, offset), *lines, "#sourceLocation()"]
    if statements:
        effects = "async throws" if re.search(r"\bawait\b", block.text) else "throws"
        out.append(f"func snippet{number}() {effects} {{")
        for offset, lines in statements:
            out += [location(block, offset), *lines, "#sourceLocation()"]
        out.append("}")
    return "\n".join(out) + "\n"


def prelude_imports(prelude):
    imports = []
    for line in prelude.read_text().split("\n")[:5]:
        if line.startswith("// snippet-imports:"):
            imports += line.removeprefix("// snippet-imports:").split()
    return imports


def swift_units(blocks, work):
    """The compiler invocations: (name, [files]) for each module of fragments and each program."""
    units, modules, failures = [], {}, []
    for number, block in enumerate(blocks):
        kind, argument = block.marker or (None, None)
        if kind == "snippet" and argument == "main":
            directory = work / f"program{number}"
            directory.mkdir()
            (directory / "main.swift").write_text(f"{location(block, 0)}\n{block.text}\n")
            units.append((block.where + " (a complete program)", [directory / "main.swift"]))
            continue
        if kind == "snippet" and argument.startswith("prelude "):
            prelude = PRELUDES / f"{argument.removeprefix('prelude ').strip()}.swift"
            if not prelude.exists():
                failures.append(f"{block.where}: no prelude {prelude.relative_to(ROOT)}")
                continue
        elif kind == "snippet":
            failures.append(f"{block.where}: unknown marker 'snippet: {argument}' "
                            "(main, manifest, prelude NAME or no-compile: REASON)")
            continue
        else:
            stem = block.path.stem
            prelude = PRELUDES / f"{stem}.swift"
        key = (block.path, prelude)
        if key not in modules:
            directory = work / f"module{len(modules)}"
            directory.mkdir()
            files, imports = [], FRAGMENT_IMPORTS + (prelude_imports(prelude) if prelude.exists() else [])
            if prelude.exists():
                files.append(directory / "Prelude.swift")
                files[0].write_text("".join(f"import {module}\n" for module in imports)
                                    + f'#sourceLocation(file: "{prelude.relative_to(ROOT)}", line: 1)\n'
                                    + prelude.read_text())
            name = f"{block.path.relative_to(ROOT)} with {prelude.relative_to(ROOT)}"
            modules[key] = (directory, files, imports)
            units.append((name, files))
        directory, files, imports = modules[key]
        source = directory / f"Snippet{number}.swift"
        source.write_text(fragment_source(block, number, imports))
        files.append(source)
    return units, failures


def include_paths():
    """The package's C module maps and the system headers they include (sqlite3, libpq)."""
    paths = {str(path.parent) for path in (ROOT / "Sources").rglob("module.modulemap")}
    system = subprocess.run(["pkg-config", "--cflags-only-I", "sqlite3", "libpq"],
                            capture_output=True, text=True, check=True).stdout.split()
    return [argument for path in sorted(paths) for argument in ("-I", path)] + \
        [argument for flag in system for argument in ("-Xcc", flag)]


def typecheck(unit, modules, includes):
    name, files = unit
    if not files:
        return name, None
    result = subprocess.run(
        ["swiftc", "-typecheck", "-swift-version", "6", "-suppress-warnings", "-module-name", "DocSnippets",
         "-I", modules, *includes, *map(str, files)],
        capture_output=True, text=True)
    return name, (result.stderr or result.stdout) if result.returncode else None


def c_source(block):
    if re.search(r"\bmain\s*\(", block.text):
        return f'#line {block.line} "{block.path.relative_to(ROOT)}"\n{block.text}\n'
    out, body = [], []
    for offset, line in enumerate(block.text.split("\n")):
        target = out if line.startswith("#") else body
        target += [f'#line {block.line + offset} "{block.path.relative_to(ROOT)}"', line]
    return "\n".join(out + ["int main(void) {", *body, "return 0;", "}"]) + "\n"


def compile_c(block):
    result = subprocess.run(
        [os.environ.get("CC", "gcc"), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only",
         "-I", str(ROOT / "include"), "-x", "c", "-"],
        input=c_source(block), capture_output=True, text=True)
    return block.where, (result.stderr or result.stdout) if result.returncode else None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    modules = sys.argv[1]
    started = time.monotonic()
    blocks = [block for path in DOCS for block in blocks_of(path)]
    skipped = [block for block in blocks if block.marker and block.marker[0] == "no-compile"]
    failures = [f"{block.where}: 'no-compile' needs a reason" for block in skipped if not block.marker[1]]
    manifests = [block for block in blocks if block.marker == ("snippet", "manifest")]
    swift = [block for block in blocks if block.language == "swift" and block not in skipped + manifests]
    c = [block for block in blocks if block.language == "c" and block not in skipped]
    with tempfile.TemporaryDirectory() as directory:
        units, unit_failures = swift_units(swift, pathlib.Path(directory))
        failures += unit_failures
        includes = include_paths()
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda unit: typecheck(unit, modules, includes), units))
            results += list(pool.map(compile_c, c))
    for name, error in results:
        if error:
            failures.append(f"{name} does not compile:\n{error}")
    for failure in failures:
        print(f"check-doc-snippets: {failure}")
    files = len(DOCS)
    print(f"check-doc-snippets: {len(swift)} Swift blocks ({len(units)} compiler runs) and {len(c)} C blocks "
          f"of {files} Markdown files {'do not all compile' if failures else 'compile'}; "
          f"{len(skipped)} marked no-compile; {len(manifests)} Package.swift (make package-graph resolves them); "
          f"{time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
