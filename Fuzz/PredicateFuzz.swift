// libFuzzer target for the predicate language: tokenizer, parser and renderer.
// Built by `make fuzz` together with Sources/ARQuery/Predicate*.swift (which
// depend on nothing else) and the library's one quoting function
// (Sources/ARCore/Identifier.swift). Any input must either fail with a
// PredicateSyntaxError or render to SQL made only of quoted identifiers,
// `?` parameters, operators, parentheses and the grammar's keywords.

/// Removes double-quoted identifiers (with doubled quotes inside) from `sql`.
private func strippingIdentifiers(_ sql: String) -> String {
    var result = ""
    var inside = false
    var iterator = sql.unicodeScalars.makeIterator()
    var pending: Unicode.Scalar? = nil
    while let scalar = pending ?? iterator.next() {
        pending = nil
        if inside {
            if scalar == "\"" {
                let next = iterator.next()
                if next == "\"" { continue }
                inside = false
                pending = next
                result.append("I")
            }
            continue
        }
        if scalar == "\"" { inside = true; continue }
        result.unicodeScalars.append(scalar)
    }
    precondition(!inside, "unterminated identifier in rendered SQL: \(sql)")
    return result
}

private let allowedWords: Set<Substring> = [
    "AND", "OR", "NOT", "LIKE", "IN", "BETWEEN", "IS", "NULL", "I",
    "count", "sum", "avg", "min", "max", "total",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func predicateFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let format = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parsed: (node: PredicateNode, placeholderCount: Int)
    do {
        parsed = try parsePredicate(format)
    } catch {
        precondition(error.position >= 1 && error.position <= format.unicodeScalars.count + 1, "position out of range: \(error)")
        return 0
    }
    var renderer = PredicateRenderer(
        resolveColumn: { qualifier, name, _ in (qualifier.map { quoteIdentifier($0) + "." } ?? "") + quoteIdentifier(name) },
        shape: { index, _ in [.value, .null, .list(count: index % 4)][index % 3] })
    let sql: String
    do {
        sql = try renderer.render(parsed.node)
    } catch is PredicateSyntaxError {
        return 0
    } catch {
        preconditionFailure("unexpected error type: \(error)")
    }
    let bare = strippingIdentifiers(sql)
    for scalar in bare.unicodeScalars {
        precondition(
            " ?(),.*=<>!".unicodeScalars.contains(scalar) || (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z"),
            "unexpected character \(scalar) in rendered SQL: \(sql)")
    }
    for word in bare.split(whereSeparator: { !$0.isLetter }) {
        precondition(allowedWords.contains(word), "unexpected word \(word) in rendered SQL: \(sql)")
    }
    let marks = bare.filter { $0 == "?" }.count
    precondition(marks == renderer.parameters.count, "\(marks) marks but \(renderer.parameters.count) parameters: \(sql)")
    return 0
}
