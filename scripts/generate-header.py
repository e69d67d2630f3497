#!/usr/bin/env python3
"""Generates include/activerecord.h from the header the Swift compiler emits for the
ARCShim target (ARCShim-Swift.h), keeping only the C API: the `@c` enums and
functions with their doc comments, rewritten as plain C99 (gcc and clang, -pedantic).

Conventions the shim follows so that this stays simple:
  * handles are `OpaquePointer?` in Swift (`void *` in the Swift header); the parameter name
    gives the C handle type (HANDLES below), e.g. `record` -> `ar_record *record`,
    `record_out` -> `ar_record **record_out`; an unknown `void *` name is an error;
  * enum cases `ar_resultNotFound` become `AR_NOT_FOUND` (ar_result) or `AR_TYPE_TEXT`.

Usage: generate-header.py SWIFT_HEADER OUTPUT
"""
import re
import sys

HANDLES = {
    "database": "ar_database", "database_out": "ar_database",
    "model": "ar_model", "model_out": "ar_model", "parent_model": "ar_model", "child_model": "ar_model",
    "record": "ar_record", "record_out": "ar_record", "parent": "ar_record",
    "query": "ar_query", "query_out": "ar_query",
    "records": "ar_record",
}


# `void *` parameters that are plain memory, not handles.
PLAIN_POINTERS = {"pointer", "context"}

# Function-pointer parameters, by name: the C type the header names them by (a typedef below).
CALLBACKS = {
    "body": ("ar_transaction_body", r"ar_result \(\* body\)\(void \*, void \*\)"),
}
CALLBACK_TYPEDEFS = [
    "/* The work ar_db_retrying runs in a transaction: AR_OK to commit, anything else to roll back. */",
    "typedef ar_result (*ar_transaction_body)(ar_database *database, void *context);",
    "",
]

# Enum parameters the shim takes as plain int32_t (checked inside), by name.
ENUM_PARAMETERS = {"type": "ar_type"}


def comment(lines):
    text = []
    for line in lines:
        line = line.strip()[3:].strip()
        line = re.sub(r"</?code>", "", line).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        text.append("// " + line if line else "//")
    return text


def case_name(enum, case):
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", case)
    words = re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", words).upper()
    prefix = "AR_" if enum == "ar_result" else enum.upper() + "_"
    return prefix + words


def parameter(text):
    text = text.strip()
    # Arrays of handles and out-parameters: `void * const * records`, `void * * record_out`.
    match = re.fullmatch(r"void \* (const )?\* (\w+)", text)
    if match:
        name = match.group(2)
        if name not in HANDLES:
            sys.exit(f"generate-header: no handle type for parameter '{name}'")
        return f"{HANDLES[name]} *{'const ' if match.group(1) else ''}*{name}"
    match = re.fullmatch(r"void \* (\w+)", text)
    if match:
        name = match.group(1)
        if name in PLAIN_POINTERS:
            return f"void *{name}"
        if name not in HANDLES:
            sys.exit(f"generate-header: no handle type for parameter '{name}'")
        return f"{HANDLES[name]} *{name}"
    match = re.fullmatch(r"int32_t (\w+)", text)
    if match and match.group(1) in ENUM_PARAMETERS:
        return f"{ENUM_PARAMETERS[match.group(1)]} {match.group(1)}"
    text = text.replace("char const *", "const char *").replace("void const *", "const void *")
    text = re.sub(r"\* \* ", "**", text)
    text = re.sub(r"(\w) \* (\w)", r"\1 *\2", text)
    return text


def function(line):
    for token in ("SWIFT_EXTERN ", "SWIFT_ENUM_TAG ", " SWIFT_NOEXCEPT", " SWIFT_WARN_UNUSED_RESULT"):
        line = line.replace(token, "")
    for token in (" _Nullable", " _Nonnull", " _Null_unspecified"):
        line = line.replace(token, "")
    match = re.fullmatch(r"(.+?)\s*\b(ar_\w+)\((.*)\);", line.strip())
    if not match:
        sys.exit(f"generate-header: cannot read declaration: {line}")
    result, name, params = match.groups()
    result = result.replace("char const *", "const char *").strip()
    if result.endswith("*"):
        result = result[:-1].rstrip() + " *"
    else:
        result += " "
    # A function pointer's own commas would split it: named by its typedef first.
    for type_name, pattern in CALLBACKS.values():
        params = re.sub(pattern, type_name.replace("_", "\u0000") + " body", params)
    params = "void" if params.strip() in ("", "void") else ", ".join(parameter(p) for p in params.split(","))
    params = params.replace("\u0000", "_")
    return f"{result}{name}({params});"


def main(source, output):
    lines = open(source).read().splitlines()
    enums, functions, docs = [], [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("///"):
            docs.append(line)
        elif line.startswith("typedef SWIFT_ENUM("):
            name = re.match(r"typedef SWIFT_ENUM\(\w+, (\w+), \w+\) \{", line).group(1)
            body, case_docs = [], []
            i += 1
            while not lines[i].startswith("};"):
                item = lines[i].strip()
                if item.startswith("///"):
                    case_docs.append(item)
                else:
                    case, value = re.fullmatch(r"(\w+) = (-?\d+),", item).groups()
                    body += ["    " + c for c in comment(case_docs)]
                    body.append(f"    {case_name(name, case[len(name):])} = {value},")
                    case_docs = []
                i += 1
            enums.append(comment(docs) + [f"typedef enum {name} {{"] + body + [f"}} {name};", ""])
            docs = []
        elif line.startswith("SWIFT_EXTERN") and " ar_" in line:
            functions.append(comment(docs) + [function(line), ""])
            docs = []
        else:
            docs = []
        i += 1
    if not functions:
        sys.exit("generate-header: no ar_ functions found")
    handle_types = sorted(set(HANDLES.values()))
    out = [
        "/* activerecord.h: the C API of swift-activerecord (libactiverecord.so).",
        " *",
        " * GENERATED by `make header` (scripts/generate-header.py) from Sources/ARCShim;",
        " * do not edit: `make test` fails when this file differs from a fresh generation.",
        " *",
        " * Every call that can fail returns an ar_result (AR_OK is 0) and, on failure, sets the",
        " * calling thread's last error message for the database (ar_last_error), and sets every",
        " * out parameter it was given to NULL (or 0). Handles are released with their",
        " * ar_*_free / ar_close; strings returned are owned by the handle that returned them",
        " * unless a function says the caller frees them with ar_free.",
        " *",
        " * Releasing a handle twice, or with the wrong function, is refused (nothing is released,",
        " * ar_last_error(NULL) says why): a released handle is never read again. Passing a",
        " * released handle to any other call is undefined, as with memory after free(); and once",
        " * released, its address may be reused by a new handle, which a second release of the",
        " * stale pointer would then release. Set a pointer to NULL after releasing it.",
        " *",
        " * Threads: a database and its models may be used from several threads at once; a",
        " * record, or a query together with the records it returned, from one thread at a time.",
        " */",
        "#ifndef ACTIVERECORD_H",
        "#define ACTIVERECORD_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
    ]
    for handle in handle_types:
        out.append(f"/* An opaque handle. */\ntypedef struct {handle} {handle};")
    out.append("")
    for enum in enums:
        out += enum
    out += CALLBACK_TYPEDEFS
    for declaration in functions:
        out += declaration
    out += ["#ifdef __cplusplus", "}", "#endif", "", "#endif /* ACTIVERECORD_H */", ""]
    open(output, "w").write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
