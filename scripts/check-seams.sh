#!/usr/bin/env bash
# The seams the code keeps, checked by `make test` (a grep: cheap, and it names the line):
#  1. Identifiers are quoted only through quoteIdentifier/quoteSQL (Sources/ARCore/Identifier.swift):
#     quoting with replacingOccurrences misses a quote followed by a combining mark.
#  2. Raw memory stays in ARCore (and the C shim, whose job it is): the feature targets get
#     typed access (HookFieldSite), never pointers.
#  3. SQLite failures are recognised by their extended result code, never by message text.
#  4. ARValidation depends on ARCore only.
#  5. Engines stay behind the backend boundary (Sources/ARCore/Engine.swift): SQLite's C API,
#     its pragmas and its schema table appear only in Sources/ARCore/SQLite, libpq only in
#     Sources/ActiveRecordPostgreSQL; everything above is written once, for every engine.
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

hits=$(grep -rnE 'import ActiveRecordSQLite|sqlite3_|sqlite_master|pragma_|PRAGMA ' Sources --include=*.swift \
    | grep -v '^Sources/ARCore/SQLite/')
[ -z "$hits" ] || fail "SQLite itself outside Sources/ARCore/SQLite (put it behind the SQLDialect/EngineConnection boundary):" "$hits"

hits=$(grep -rnE 'import ActiveRecordLibPQ|\bPQ[a-z]+\(' Sources --include=*.swift | grep -v '^Sources/ActiveRecordPostgreSQL/')
[ -z "$hits" ] || fail "libpq outside Sources/ActiveRecordPostgreSQL:" "$hits"

[ $status -eq 0 ] && echo "check-seams: quoting, raw memory, error codes, ARValidation's dependencies and the engines keep to their seams"
exit $status
