#!/usr/bin/env bash
# The seams the code keeps, checked by `make test` (a grep: cheap, and it names the line):
#  1. Identifiers are quoted only through quoteIdentifier/quoteSQL (Sources/ARCore/Identifier.swift):
#     quoting with replacingOccurrences misses a quote followed by a combining mark.
#  2. Raw memory stays in ARCore (and the C shim, whose job it is): the feature targets get
#     typed access (HookFieldSite), never pointers.
#  3. SQLite failures are recognised by their extended result code, never by message text.
#  4. ARValidation depends on ARCore only.
#  5. Engines stay behind the backend boundary (Sources/ARCore/Engine.swift): SQLite's C API,
#     its pragmas and its schema table appear only in Sources/ARSQLite, libpq only in
#     Sources/ActiveRecordPostgreSQL; everything above is written once, for every engine.
#  6. ARCore names no engine: no SQLite (or PostgreSQL) identifier in its code; comments may
#     name them as engines among others, and so may a message that says why no engine stores a
#     value (marked `// names an engine among others`).
#  7. Every `@exclusivity(unchecked)` has its reason: a comment saying "exclusivity" in the
#     type (or extension) that declares it, before the first one.
#  8. No measured instruction count in a comment under Sources ("~40 instructions a look-up"):
#     the comment says what the trick avoids, and the figure, dated, lives in
#     Benchmarks/README.md, "Hot-path notes". A count split over two comment lines is caught too.
#  9. FoundationEssentials, not Foundation: a file under Sources (or a Swift example of the
#     package, or the stress child) imports Foundation only in the `#else` of
#     `#if canImport(FoundationEssentials)`, and FoundationInternationalization never: with ICU's
#     data they are 51 MiB in every program and beside the installed C library
#     (scripts/runtime-size.sh; scripts/test-install.sh checks the installed size).
set -u
cd "$(dirname "$0")/.."
status=0
fail() { echo "check-seams: $1"; printf '%s\n' "$2" | sed 's/^/    /'; status=1; }

hits=$(grep -rnE 'replacingOccurrences\(of: "\\""|"\\"" *\+|\+ *"\\""' Sources Fuzz)
[ -z "$hits" ] || fail "quote identifiers with quoteIdentifier / .quotedIdentifier, not by hand:" "$hits"

hits=$(grep -rnE 'Unsafe[A-Za-z]*Pointer|assumingMemoryBound|withMemoryRebound|unsafeBitCast|Unmanaged' \
    Sources/ARQuery Sources/ARRelations Sources/ARValidation Sources/ARMigrations)
[ -z "$hits" ] || fail "raw memory outside ARCore (give the feature typed access instead):" "$hits"

hits=$(grep -rnE '"[^"]*constraint failed|\.message\.(hasPrefix|contains|hasSuffix)' Sources)
[ -z "$hits" ] || fail "an error recognised by its message text (use its extended result code):" "$hits"

hits=$(grep -rnE '^import (ARQuery|ARRelations|ARMigrations|ActiveRecord)$' Sources/ARValidation)
[ -z "$hits" ] || fail "ARValidation imports more than ARCore:" "$hits"

hits=$(grep -rnE 'import ARSQLite3|sqlite3_|sqlite_master|pragma_|PRAGMA ' Sources --include=*.swift \
    | grep -v '^Sources/ARSQLite/')
[ -z "$hits" ] || fail "SQLite itself outside Sources/ARSQLite (put it behind the SQLDialect/EngineConnection boundary):" "$hits"

hits=$(grep -rniE 'sqlite|postgres' Sources/ARCore --include=*.swift | grep -vE '^[^:]+:[0-9]+: *//|// names an engine among others$')
[ -z "$hits" ] || fail "an engine named in ARCore's code (ARCore is written for every engine; the engine's own target holds what is its own):" "$hits"

hits=$(python3 - <<'PY'
import pathlib, re
for path in sorted(pathlib.Path("Sources").rglob("*.swift")):
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        if "@exclusivity(unchecked)" not in line or line.lstrip().startswith("//"):
            continue
        indent = len(line) - len(line.lstrip())
        explained = False
        for above in reversed(lines[:number]):
            stripped = above.lstrip()
            if stripped.startswith("//") and "exclusivity" in stripped.lower():
                explained = True
                break
            if re.match(r"(?:\w+ )*(?:class|struct|enum|extension|actor)\b", stripped) and len(above) - len(stripped) < indent:
                break
        if not explained:
            print(f"{path}:{number + 1}: {line.strip()}")
PY
)
[ -z "$hits" ] || fail "unchecked exclusivity without its reason (say why, in a comment with the word exclusivity, in the declaring type before it; or drop it):" "$hits"

hits=$(python3 - <<'PY'
import pathlib, re
# Exceptions (file name, phrase): none. A figure belongs in Benchmarks/README.md, Hot-path notes.
allowed = []
count = re.compile(r"\d\)?\s+instructions\b|\b(?:hundreds|thousands) of\s+instructions\b", re.I)
comment = re.compile(r"(?<![:/])//+\s?(.*)$")
for path in sorted(pathlib.Path("Sources").rglob("*.swift")):
    block = []  # (line number, text) of the comment lines in a row
    def check():
        text = " ".join(part for _, part in block)
        starts = [len(" ".join(part for _, part in block[:i])) + (1 if i else 0) for i in range(len(block))]
        for match in count.finditer(text):
            if any(path.name == name and 0 <= text.find(phrase) <= match.start() < text.find(phrase) + len(phrase)
                   for name, phrase in allowed):
                continue
            line = max(i for i, start in enumerate(starts) if start <= match.start())
            print(f"{path}:{block[line][0]}: {block[line][1].strip()}")
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found = comment.search(line)
        if found:
            block.append((number, found.group(1).strip()))
            if not line.lstrip().startswith("//"):
                check(); block = []
        else:
            check(); block = []
    check()
PY
)
[ -z "$hits" ] || fail "an instruction count in a comment (keep the reason in the comment; put the figure, with its date, in Benchmarks/README.md, Hot-path notes):" "$hits"

hits=$(grep -rnE 'import ARLibPQ|\bPQ[a-z]+\(' Sources --include=*.swift | grep -v '^Sources/ActiveRecordPostgreSQL/')
[ -z "$hits" ] || fail "libpq outside Sources/ActiveRecordPostgreSQL:" "$hits"

hits=$(python3 - <<'PY'
import pathlib, re
folders = ["Sources", "Tests/StressChild"] + [f"Examples/{name}" for name in
    ["Quickstart", "PostgreSQL", "Library", "Validations", "Migrations", "Threads"]]
importing = re.compile(r"^\s*(?:@[\w()]+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
                       r"(?:(?:struct|class|enum|protocol|typealias|func|let|var)\s+)?(Foundation\w*)\b")
for folder in folders:
    for path in sorted(pathlib.Path(folder).rglob("*.swift")):
        branches = []  # per open #if: (its condition, whether in its #else)
        for number, line in enumerate(path.read_text().splitlines(), 1):
            directive = line.strip()
            if directive.startswith("#if "):
                branches.append((directive[4:].strip(), False))
            elif directive.startswith(("#elseif", "#else")) and branches:
                branches[-1] = (branches[-1][0] if directive == "#else" else directive, directive == "#else")
            elif directive.startswith("#endif") and branches:
                branches.pop()
            found = importing.match(line)
            if not found or found.group(1) == "FoundationEssentials":
                continue
            fallback = bool(branches) and branches[-1] == ("canImport(FoundationEssentials)", True)
            if found.group(1) != "Foundation" or not fallback:
                print(f"{path}:{number}: {line.strip()}")
PY
)
[ -z "$hits" ] || fail "Foundation imported where FoundationEssentials serves (write #if canImport(FoundationEssentials) / import FoundationEssentials / #else / import Foundation / #endif; FoundationInternationalization never):" "$hits"

[ $status -eq 0 ] && echo "check-seams: quoting, raw memory, error codes, ARValidation's dependencies, the engines, unchecked exclusivity, instruction counts and Foundation imports keep to their seams"
exit $status
