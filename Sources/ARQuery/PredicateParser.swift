@_spi(Engines) import ARCore
// The predicate language's parser: tokens to a `PredicateNode` tree.
// Pure Swift, compiled on its own by the fuzz target.
//
//     predicate  := or
//     or         := and (OR and)*
//     and        := unary (AND unary)*
//     unary      := NOT unary | '(' or ')' | condition
//     condition  := operand ( compare operand
//                           | [NOT] LIKE operand [ESCAPE operand]
//                           | [NOT] IN (placeholder | '(' operand (',' operand)* ')')
//                           | [NOT] BETWEEN operand AND operand
//                           | IS [NOT] NULL )
//     operand    := column ('->' 'key')* | placeholder | number | '-' number | 'string' | NULL
//                 | aggregate '(' ('*' | column) ')'
//     column     := name | name '.' name        name := bare | "double quoted" | 'single quoted'

/// Parses a whole predicate.
///
/// - Parameter maximumDepth: how deeply parentheses and `NOT` may nest;
///   deeper input is an error, never a stack overflow.
/// - Returns: the tree and the number of placeholders it uses.
package func parsePredicate(
    _ format: String, maximumDepth: Int = PredicateParser.defaultMaximumDepth
) throws(PredicateSyntaxError) -> (node: PredicateNode, placeholderCount: Int) {
    var parser = PredicateParser(tokens: try tokenizePredicate(format), maximumDepth: maximumDepth)
    let node = try parser.parseWhole()
    return (node, parser.placeholderCount)
}

/// Parses a list of value expressions (`age, count(*), avg(score)`), for grouped queries.
package func parseOperandList(_ text: String) throws(PredicateSyntaxError) -> [PredicateOperand] {
    var parser = PredicateParser(tokens: try tokenizePredicate(text), maximumDepth: PredicateParser.defaultMaximumDepth)
    return try parser.parseOperandList()
}

package struct PredicateParser {
    package static let defaultMaximumDepth = 100

    private let tokens: [PredicateToken]
    private var index = 0
    private var depth = 0
    private let maximumDepth: Int
    private(set) var placeholderCount = 0

    init(tokens: [PredicateToken], maximumDepth: Int) {
        self.tokens = tokens
        self.maximumDepth = maximumDepth
    }

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func describe(_ token: PredicateToken) -> String {
        switch token.kind {
        case .bareIdentifier(let name): "'\(name)'"
        case .quotedIdentifier(let name): "\"\(name)\""
        case .singleQuoted: "a string"  // a literal's value may be data: never in messages
        case .number: "a number"
        case .placeholder: "a placeholder"
        case .comparison(let op): "'\(op.rawValue)'"
        case .keyword(let keyword): keyword.rawValue.uppercased()
        case .dot: "'.'"
        case .comma: "','"
        case .leftParen: "'('"
        case .rightParen: "')'"
        case .star: "'*'"
        case .minus: "'-'"
        case .arrow: "'->'"
        case .end: "the end"
        }
    }

    private func error(_ expected: String) -> PredicateSyntaxError {
        PredicateSyntaxError("expected \(expected), found \(describe(current))", at: current.position)
    }

    private func isKeyword(_ keyword: PredicateToken.Keyword) -> Bool {
        current.kind == .keyword(keyword)
    }

    private mutating func expect(_ kind: PredicateToken.Kind, _ what: String) throws(PredicateSyntaxError) {
        guard current.kind == kind else { throw error(what) }
        advance()
    }

    private mutating func enter(at position: Int) throws(PredicateSyntaxError) {
        depth += 1
        guard depth <= maximumDepth else {
            throw PredicateSyntaxError("nesting too deep: more than \(maximumDepth) levels of parentheses or NOT", at: position)
        }
    }

    mutating func parseWhole() throws(PredicateSyntaxError) -> PredicateNode {
        guard current.kind != .end else { throw PredicateSyntaxError("the predicate is empty", at: 1) }
        let node = try parseOr()
        guard current.kind == .end else {
            if current.kind == .rightParen {
                throw PredicateSyntaxError("unbalanced parentheses: this ')' has no matching '('", at: current.position)
            }
            throw error("AND, OR or the end")
        }
        return node
    }

    mutating func parseOperandList() throws(PredicateSyntaxError) -> [PredicateOperand] {
        var operands = [try parseOperand()]
        while current.kind == .comma {
            advance()
            operands.append(try parseOperand())
        }
        guard current.kind == .end else { throw error("',' or the end") }
        return operands
    }

    private mutating func parseOr() throws(PredicateSyntaxError) -> PredicateNode {
        var terms = [try parseAnd()]
        while isKeyword(.or) {
            advance()
            terms.append(try parseAnd())
        }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws(PredicateSyntaxError) -> PredicateNode {
        var terms = [try parseUnary()]
        while isKeyword(.and) {
            advance()
            terms.append(try parseUnary())
        }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    private mutating func parseUnary() throws(PredicateSyntaxError) -> PredicateNode {
        if isKeyword(.not) {
            try enter(at: current.position)
            advance()
            let inner = try parseUnary()
            depth -= 1
            return .not(inner)
        }
        if current.kind == .leftParen {
            let open = current.position
            try enter(at: open)
            advance()
            let inner = try parseOr()
            guard current.kind == .rightParen else {
                if current.kind == .end {
                    throw PredicateSyntaxError("unbalanced parentheses: the '(' here is never closed", at: open)
                }
                throw error("')' or AND/OR")
            }
            advance()
            depth -= 1
            return inner
        }
        return try parseCondition()
    }

    private mutating func parseCondition() throws(PredicateSyntaxError) -> PredicateNode {
        let left = try parseOperand()
        let position = current.position
        switch current.kind {
        case .comparison(let op):
            advance()
            return .comparison(left, op, try parseOperand(), position: position)
        case .keyword(.is):
            advance()
            let negated = isKeyword(.not)
            if negated { advance() }
            try expect(.keyword(.null), "NULL after IS\(negated ? " NOT" : "")")
            return .isNull(left, negated: negated)
        case .keyword(.not):
            advance()
            return try parseNegatable(left, negated: true)
        case .keyword(.like), .keyword(.in), .keyword(.between):
            return try parseNegatable(left, negated: false)
        default:
            throw error("a comparison (=, !=, <, <=, >, >=, LIKE, IN, BETWEEN, IS NULL)")
        }
    }

    private mutating func parseNegatable(_ left: PredicateOperand, negated: Bool) throws(PredicateSyntaxError) -> PredicateNode {
        switch current.kind {
        case .keyword(.like):
            advance()
            let pattern = try parseOperand()
            // ESCAPE is a word only here (after a LIKE pattern no name can stand): a column may
            // still be called `escape`.
            guard case .bareIdentifier(let word) = current.kind, word.lowercased() == "escape" else {
                return .like(left, pattern, escape: nil, negated: negated)
            }
            advance()
            return .like(left, pattern, escape: try parseOperand(), negated: negated)
        case .keyword(.in):
            advance()
            if current.kind == .placeholder {
                let list = PredicateList.placeholder(index: placeholderCount, position: current.position)
                placeholderCount += 1
                advance()
                return .inList(left, list, negated: negated)
            }
            let open = current.position
            try expect(.leftParen, "a placeholder or '(' after IN")
            var operands = [try parseOperand()]
            while current.kind == .comma {
                advance()
                operands.append(try parseOperand())
            }
            guard current.kind == .rightParen else {
                if current.kind == .end {
                    throw PredicateSyntaxError("unbalanced parentheses: the '(' here is never closed", at: open)
                }
                throw error("',' or ')' in the IN list")
            }
            advance()
            return .inList(left, .operands(operands), negated: negated)
        case .keyword(.between):
            advance()
            let low = try parseOperand()
            try expect(.keyword(.and), "AND between the bounds of BETWEEN")
            return .between(left, low, try parseOperand(), negated: negated)
        default:
            throw error("LIKE, IN or BETWEEN after NOT")
        }
    }

    private mutating func parseName() throws(PredicateSyntaxError) -> String? {
        switch current.kind {
        case .bareIdentifier(let name), .quotedIdentifier(let name), .singleQuoted(let name):
            advance()
            return name
        default:
            return nil
        }
    }

    private mutating func parseOperand() throws(PredicateSyntaxError) -> PredicateOperand {
        let token = current
        switch token.kind {
        case .placeholder:
            advance()
            defer { placeholderCount += 1 }
            return .placeholder(index: placeholderCount, position: token.position)
        case .number(let text):
            advance()
            return try number(text, negative: false, at: token.position)
        case .minus:
            advance()
            guard case .number(let text) = current.kind else { throw error("a number after '-'") }
            advance()
            return try number(text, negative: true, at: token.position)
        case .keyword(.null):
            advance()
            return .null
        case .singleQuoted(let text):
            advance()
            // 'table'.'column' is a qualified column (the seeds' form); a lone 'text' is a string.
            guard current.kind == .dot else { return .text(text, position: token.position) }
            advance()
            guard let name = try parseName() else { throw error("a column name after '\(text)'.") }
            return try jsonPath(qualifier: text, name: name, at: token.position)
        case .bareIdentifier(let name), .quotedIdentifier(let name):
            advance()
            if case .bareIdentifier = token.kind, current.kind == .leftParen,
               let function = AggregateFunction(rawValue: name.lowercased()) {
                return try parseAggregate(function, at: token.position)
            }
            guard current.kind == .dot else { return try jsonPath(qualifier: nil, name: name, at: token.position) }
            advance()
            guard let column = try parseName() else { throw error("a column name after '\(name).'") }
            return try jsonPath(qualifier: name, name: column, at: token.position)
        default:
            throw error("a column, a value or a placeholder")
        }
    }

    /// The column, or the value at the keys that follow it (`->'key'`, each a quoted string)
    /// inside it, a JSON column.
    private mutating func jsonPath(qualifier: String?, name: String, at position: Int) throws(PredicateSyntaxError) -> PredicateOperand {
        var keys: [String] = []
        while current.kind == .arrow {
            advance()
            guard case .singleQuoted(let key) = current.kind else { throw error("a key in single quotes after '->'") }
            advance()
            keys.append(key)
        }
        guard !keys.isEmpty else { return .column(qualifier: qualifier, name: name, position: position) }
        return .jsonPath(qualifier: qualifier, name: name, keys: keys, position: position)
    }

    private mutating func parseAggregate(_ function: AggregateFunction, at position: Int) throws(PredicateSyntaxError) -> PredicateOperand {
        advance()  // (
        var argument: PredicateOperand?
        if current.kind == .star {
            guard function == .count else {
                throw PredicateSyntaxError("only count takes '*'", at: current.position)
            }
            advance()
        } else {
            argument = try parseOperand()
            guard case .column = argument else {
                throw PredicateSyntaxError("\(function.rawValue)(…) takes a column", at: position)
            }
        }
        try expect(.rightParen, "')' after the argument of \(function.rawValue)")
        return .aggregate(function, argument: argument, position: position)
    }

    private func number(_ text: String, negative: Bool, at position: Int) throws(PredicateSyntaxError) -> PredicateOperand {
        let signed = negative ? "-" + text : text
        if let integer = Int64(signed) { return .integer(integer) }
        if let real = Double(signed), real.isFinite { return .real(real) }
        throw PredicateSyntaxError("a number literal is out of range", at: position)
    }
}
