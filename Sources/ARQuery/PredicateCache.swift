@_spi(Engines) import ARCore

/// Parsed predicates by format string, so that a query repeated in a loop
/// parses its format once. Bounded: cleared when it holds too many.
enum PredicateCache {
    private static let limit = 1_000
    private static let entries = Lock<[String: (node: PredicateNode, placeholderCount: Int)]>([:])
    private static let operandLists = Lock<[String: [PredicateOperand]]>([:])

    /// A parsed list of columns or aggregates (`order`, `group`, `values`).
    static func parseOperands(_ text: String) throws(PredicateSyntaxError) -> [PredicateOperand] {
        if let parsed = operandLists.withLock({ $0[text] }) { return parsed }
        let parsed = try parseOperandList(text)
        operandLists.withLock { entries in
            if entries.count >= limit { entries.removeAll() }
            entries[text] = parsed
        }
        return parsed
    }

    static func parse(_ format: String) throws(PredicateSyntaxError) -> (node: PredicateNode, placeholderCount: Int) {
        if let parsed = entries.withLock({ $0[format] }) { return parsed }
        let parsed = try parsePredicate(format)
        entries.withLock { entries in
            if entries.count >= limit { entries.removeAll() }
            entries[format] = parsed
        }
        return parsed
    }
}
