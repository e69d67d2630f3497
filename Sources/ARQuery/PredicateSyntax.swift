@_spi(Engines) import ARCore
// The predicate language's tokenizer and syntax tree. Pure Swift with no
// dependency on SQLite or the rest of the library, so that the fuzz target
// (`make fuzz`) can compile it on its own.

/// A syntax error in a predicate format string, at a 1-based character position.
package struct PredicateSyntaxError: Error, Equatable, Sendable {
    package var message: String
    package var position: Int

    package init(_ message: String, at position: Int) {
        self.message = message
        self.position = position
    }
}

/// A comparison operator of the predicate language.
package enum ComparisonOperator: String, Hashable, Sendable {
    case equal = "="
    case notEqual = "<>"
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

/// An aggregate function allowed in a predicate (for `having`) or a value list.
package enum AggregateFunction: String, Hashable, Sendable, CaseIterable {
    case count, sum, avg, min, max, total
}

/// A value or column in a predicate.
package indirect enum PredicateOperand: Hashable, Sendable {
    /// `name`, `"name"`, `table.name` or `'table'.'name'`.
    case column(qualifier: String?, name: String, position: Int)
    /// The `index`-th placeholder (`%@` or `?`), 0-based.
    case placeholder(index: Int, position: Int)
    case integer(Int64)
    case real(Double)
    /// `'text'`: a string literal (where it starts, for messages).
    case text(String, position: Int)
    case null
    /// `count(*)` (argument `nil`) or `sum(column)` and the like.
    case aggregate(AggregateFunction, argument: PredicateOperand?, position: Int)
    /// `settings->'notifications'->'email'`: the value at these keys (outermost first) inside
    /// the JSON column (see `SQLDialect.jsonPath(_:keys:_:)`).
    case jsonPath(qualifier: String?, name: String, keys: [String], position: Int)
}

/// The right-hand side of `IN`.
package enum PredicateList: Hashable, Sendable {
    /// `IN %@`: an array or set argument.
    case placeholder(index: Int, position: Int)
    /// `IN (a, b, c)`.
    case operands([PredicateOperand])
}

/// A parsed predicate: a tree, rendered to SQL with every value bound.
package indirect enum PredicateNode: Hashable, Sendable {
    case and([PredicateNode])
    case or([PredicateNode])
    case not(PredicateNode)
    case comparison(PredicateOperand, ComparisonOperator, PredicateOperand, position: Int)
    /// `value [NOT] LIKE pattern [ESCAPE character]`.
    case like(PredicateOperand, PredicateOperand, escape: PredicateOperand?, negated: Bool)
    case inList(PredicateOperand, PredicateList, negated: Bool)
    case between(PredicateOperand, PredicateOperand, PredicateOperand, negated: Bool)
    case isNull(PredicateOperand, negated: Bool)
}

// MARK: - Tokens

package struct PredicateToken: Equatable {
    package enum Kind: Equatable {
        case bareIdentifier(String)
        case quotedIdentifier(String)
        case singleQuoted(String)
        case number(String)
        case placeholder
        case comparison(ComparisonOperator)
        case keyword(Keyword)
        case dot, comma, leftParen, rightParen, star, minus
        /// `->` (or `->>`, the same): a key of a JSON column follows.
        case arrow
        case end
    }

    package enum Keyword: String, Equatable, CaseIterable {
        case and, or, not, like, `in`, between, `is`, null
    }

    package var kind: Kind
    /// 1-based position of the token's first character.
    package var position: Int
}

/// Splits a format string into tokens.
package func tokenizePredicate(_ format: String) throws(PredicateSyntaxError) -> [PredicateToken] {
    let scalars = Array(format.unicodeScalars)
    var tokens: [PredicateToken] = []
    var index = 0

    func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z")
            || scalar.value >= 0x80 && scalar.properties.isAlphabetic
    }
    func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        isIdentifierStart(scalar) || isDigit(scalar) || scalar == "$"
    }
    func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar >= "0" && scalar <= "9" }

    /// Reads a quoted run; a doubled quote stands for itself.
    func quoted(_ quote: Unicode.Scalar, from start: Int) throws(PredicateSyntaxError) -> (String, Int) {
        var text = String.UnicodeScalarView()
        var position = start + 1
        while position < scalars.count {
            let scalar = scalars[position]
            if scalar == quote {
                if position + 1 < scalars.count, scalars[position + 1] == quote {
                    text.append(quote)
                    position += 2
                    continue
                }
                return (String(text), position + 1)
            }
            text.append(scalar)
            position += 1
        }
        let what = quote == "'" ? "quote (')" : "double quote (\")"
        throw PredicateSyntaxError("unterminated \(what): no closing \(quote) for the one", at: start + 1)
    }

    while index < scalars.count {
        let scalar = scalars[index]
        let position = index + 1
        switch scalar {
        case " ", "\t", "\n", "\r":
            index += 1
        case "%":
            guard index + 1 < scalars.count, scalars[index + 1] == "@" else {
                throw PredicateSyntaxError("'%' must be followed by '@' (the placeholder is %@)", at: position)
            }
            tokens.append(PredicateToken(kind: .placeholder, position: position))
            index += 2
        case "?":
            tokens.append(PredicateToken(kind: .placeholder, position: position))
            index += 1
        case "'", "\"":
            let (text, next) = try quoted(scalar, from: index)
            tokens.append(PredicateToken(kind: scalar == "'" ? .singleQuoted(text) : .quotedIdentifier(text), position: position))
            index = next
        case "(":
            tokens.append(PredicateToken(kind: .leftParen, position: position)); index += 1
        case ")":
            tokens.append(PredicateToken(kind: .rightParen, position: position)); index += 1
        case ",":
            tokens.append(PredicateToken(kind: .comma, position: position)); index += 1
        case "*":
            tokens.append(PredicateToken(kind: .star, position: position)); index += 1
        case "-":
            if index + 1 < scalars.count, scalars[index + 1] == ">" {
                let long = index + 2 < scalars.count && scalars[index + 2] == ">"
                tokens.append(PredicateToken(kind: .arrow, position: position))
                index += long ? 3 : 2
            } else {
                tokens.append(PredicateToken(kind: .minus, position: position)); index += 1
            }
        case "=":
            let double = index + 1 < scalars.count && scalars[index + 1] == "="
            tokens.append(PredicateToken(kind: .comparison(.equal), position: position))
            index += double ? 2 : 1
        case "!":
            guard index + 1 < scalars.count, scalars[index + 1] == "=" else {
                throw PredicateSyntaxError("'!' must be followed by '=' (not equal is != or <>)", at: position)
            }
            tokens.append(PredicateToken(kind: .comparison(.notEqual), position: position))
            index += 2
        case "<":
            let next = index + 1 < scalars.count ? scalars[index + 1] : " "
            let kind: ComparisonOperator = next == "=" ? .lessOrEqual : next == ">" ? .notEqual : .less
            tokens.append(PredicateToken(kind: .comparison(kind), position: position))
            index += kind == .less ? 1 : 2
        case ">":
            let orEqual = index + 1 < scalars.count && scalars[index + 1] == "="
            tokens.append(PredicateToken(kind: .comparison(orEqual ? .greaterOrEqual : .greater), position: position))
            index += orEqual ? 2 : 1
        case ".":
            if index + 1 < scalars.count, isDigit(scalars[index + 1]) {
                fallthrough
            }
            tokens.append(PredicateToken(kind: .dot, position: position)); index += 1
        case "0"..."9":
            var end = index
            while end < scalars.count, isDigit(scalars[end]) { end += 1 }
            if end < scalars.count, scalars[end] == ".", end + 1 < scalars.count, isDigit(scalars[end + 1]) || end == index {
                end += 1
                while end < scalars.count, isDigit(scalars[end]) { end += 1 }
            }
            if end < scalars.count, scalars[end] == "e" || scalars[end] == "E" {
                var exponent = end + 1
                if exponent < scalars.count, scalars[exponent] == "+" || scalars[exponent] == "-" { exponent += 1 }
                if exponent < scalars.count, isDigit(scalars[exponent]) {
                    end = exponent
                    while end < scalars.count, isDigit(scalars[end]) { end += 1 }
                }
            }
            if end < scalars.count, isIdentifierPart(scalars[end]) {
                throw PredicateSyntaxError("a number cannot run into letters", at: end + 1)
            }
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars[index..<end])
            tokens.append(PredicateToken(kind: .number(String(text)), position: position))
            index = end
        default:
            guard isIdentifierStart(scalar) else {
                let shown = scalar.value < 0x20 || scalar.value == 0x7F
                    ? "U+\(String(scalar.value, radix: 16, uppercase: true))" : "'\(scalar)'"
                throw PredicateSyntaxError("unexpected character \(shown)", at: position)
            }
            var end = index
            while end < scalars.count, isIdentifierPart(scalars[end]) { end += 1 }
            var text = String.UnicodeScalarView()
            text.append(contentsOf: scalars[index..<end])
            let word = String(text)
            if let keyword = PredicateToken.Keyword(rawValue: word.lowercased()) {
                tokens.append(PredicateToken(kind: .keyword(keyword), position: position))
            } else {
                tokens.append(PredicateToken(kind: .bareIdentifier(word), position: position))
            }
            index = end
        }
    }
    tokens.append(PredicateToken(kind: .end, position: scalars.count + 1))
    return tokens
}
