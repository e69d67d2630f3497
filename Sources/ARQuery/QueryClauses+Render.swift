@_spi(Engines) import ARCore

extension QueryClauses {
    // MARK: Rendering

    /// Renders one `where`/`having` condition (the `number`-th, counting `where`s then
    /// `having`s), appending where each of its parameters takes its value from to `slots`.
    func render(
        _ condition: Condition, number: Int, _ tables: [QueryTable], _ dialect: any SQLDialect, slots: inout [ArgumentSlot]
    ) throws -> String {
        let format: String?
        let node: PredicateNode
        let placeholders: Int
        let sources: QueryArgument.Sources
        switch condition {
        case .failed(let error):
            throw error
        case .vacant:
            preconditionFailure("a vacant condition is not a query's")
        case .format(let text, let arguments):
            do {
                (node, placeholders) = try PredicateCache.parse(text)
            } catch {
                throw Self.syntaxError(error, in: text)
            }
            format = text
            sources = arguments
        case .tree(let tree, let arguments):
            (format, node, placeholders, sources) = (nil, tree, arguments.count, arguments)
        case .field(let key, let arguments):
            (format, node, placeholders, sources) = (nil, FieldTree.node(key), arguments.count, arguments)
        }
        // Made only for a message: masking and quoting the format costs more than rendering it.
        let context = { format.map { " in \(quote($0))" } ?? "" }
        guard sources.count == placeholders else {
            throw ActiveRecordError(
                .invalidPredicate,
                "\(quote(format ?? "")) has \(placeholders) placeholder\(placeholders == 1 ? "" : "s") "
                    + "but \(sources.count) argument\(sources.count == 1 ? " was" : "s were") given")
        }
        let converted = try sources.enumerated().map { index, source in
            try convert(source, placeholder: index + 1, context: context)
        }
        var renderer = makeRenderer(tables, dialect, values: converted, inCode: format == nil)
        let sql = try rethrowing(context: context, format: format) { try renderer.render(node) }
        slots += renderer.parameters.map { slot($0, condition: number) }
        switch node {
        case .and, .or: return sql  // already in parentheses
        default: return "(" + sql + ")"
        }
    }

    /// Renders a column or aggregate expression (`name`, `Group.title`, `count(*)`). A
    /// column's exact name is that column, whatever characters it holds (the C API orders
    /// by names, not expressions).
    func renderExpression(
        _ text: String, _ tables: [QueryTable], _ dialect: any SQLDialect, into arguments: inout [DatabaseValue]
    ) throws -> String {
        for table in tables {
            if let column = table.qualifiedColumn(text) { return column }
        }
        let operands = try renderExpressions(text, tables, dialect, into: &arguments)
        guard operands.count == 1 else {
            throw ActiveRecordError(.invalidPredicate, "expected one column in \(quote(text))")
        }
        return operands[0]
    }

    /// Renders a comma-separated list of column or aggregate expressions.
    func renderExpressions(
        _ text: String, _ tables: [QueryTable], _ dialect: any SQLDialect, into arguments: inout [DatabaseValue]
    ) throws -> [String] {
        let context = { " in \(quote(text))" }
        let operands: [PredicateOperand]
        do {
            operands = try PredicateCache.parseOperands(text)
        } catch {
            throw ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position)\(context())")
        }
        var renderer = makeRenderer(tables, dialect, values: [], inCode: false)
        let rendered = try rethrowing(context: context, format: text) { try operands.map { try renderer.render($0) } }
        for parameter in renderer.parameters {
            // No placeholders here (the renderer refuses them): every parameter is a literal.
            if case .constant(let value) = slot(parameter, condition: 0) { arguments.append(value) }
        }
        return rendered
    }

    /// A renderer for a condition's `values`, given in a format string or in code (`inCode`),
    /// which decides the shape of a list (see ``QueryArgument/shape(inCode:)``).
    private func makeRenderer(
        _ tables: [QueryTable], _ dialect: any SQLDialect, values: [QueryArgument], inCode: Bool
    ) -> PredicateRenderer {
        PredicateRenderer(
            resolveColumn: { qualifier, name, position in
                try resolve(qualifier: qualifier, name: name, position: position, tables)
            },
            shape: { index, position in
                guard index < values.count else {
                    throw PredicateSyntaxError("placeholders are not allowed here", at: position)
                }
                return values[index].shape(inCode: inCode)
            },
            like: { dialect.like($0, $1, escape: $2, negated: $3) },
            aggregate: dialect.aggregate,
            inList: { dialect.inList($0, negated: $1) },
            jsonPath: { column, keys, use, named in
                try Self.checkJSONColumn(qualifier: named.qualifier, name: named.name, position: named.position, tables)
                let sql = dialect.jsonPath(column, keys: keys, use.dialectUse)
                return (sql.sql, sql.parameters.map { parameter in
                    switch parameter {
                    case .constant(.text(let text)): .text(text)
                    case .constant: preconditionFailure("a JSON path's constants are text")
                    case .value: .value
                    }
                })
            })
    }

    /// Throws when `name` is a model's column that does not hold JSON (its type is not stored as
    /// JSON): a path into it would fail at run time, differently on each engine. A run-time
    /// model's columns (the C API's) are not checked: their kinds may come from the database.
    private static func checkJSONColumn(qualifier: String?, name: String, position: Int, _ tables: [QueryTable]) throws {
        let candidates = qualifier.map { qualifier in
            tables.filter { isSameName($0.table.schema.name, qualifier) || isSameName($0.modelName, qualifier) }
        } ?? tables
        guard let table = candidates.first(where: { $0.table.position(of: name) != nil }), table.mapping != nil,
              let index = table.table.position(of: name) else { return }
        let schema = table.table.schema
        let columnName = schema.allColumnNames[index]
        guard schema.columns.first(where: { $0.name == columnName })?.kind != .json else { return }
        throw PredicateSyntaxError(
            "\(columnName) is not a JSON column: a path (->, or where(_:_:_:) with keys) reads inside a Codable column only",
            at: position)
    }

    private func rethrowing<R>(context: () -> String, format: String?, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as PredicateSyntaxError {
            let at = format == nil ? "" : " at position \(error.position)"
            throw ActiveRecordError(.invalidPredicate, "\(error.message)\(at)\(context())")
        } catch let error as ResolutionError {
            let at = format == nil ? "" : " at position \(error.position)"
            throw ActiveRecordError(error.code, "\(error.subject)\(at)\(context()); \(error.detail)")
        }
    }

    private func convert(_ source: QueryArgument.Source, placeholder: Int, context: () -> String) throws -> QueryArgument {
        do {
            return try source.converted()
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(error.code, "argument \(placeholder)\(context()): \(error.message)")
        }
    }

    /// Where a parameter the renderer wrote for the `condition`-th condition takes its value from.
    private func slot(_ source: ParameterSource, condition: Int) -> ArgumentSlot {
        switch source {
        case .argument(let index): .argument(condition: condition, index: index)
        case .argumentElement(let index, let element): .element(condition: condition, index: index, element: element)
        case .argumentList(let index): .list(condition: condition, index: index)
        case .integer(let value): .constant(.integer(value))
        case .real(let value): .constant(.real(value))
        case .text(let value): .constant(.text(value))
        case .argumentJSON(let index, let element): .json(condition: condition, index: index, element: element)
        }
    }

    // MARK: Resolution

    /// `"Table"."column"` for a column of one of the query's tables.
    private func resolve(qualifier: String?, name: String, position: Int, _ tables: [QueryTable]) throws -> String {
        var candidates = tables
        if let qualifier {
            candidates = tables.filter {
                isSameName($0.table.schema.name, qualifier) || isSameName($0.modelName, qualifier)
            }
            guard !candidates.isEmpty else {
                throw ResolutionError(
                    code: .unknownTable, subject: "unknown table '\(qualifier)'",
                    detail: "the query has: \(tables.map(\.table.schema.name).joined(separator: ", "))",
                    position: position)
            }
        }
        for table in candidates {
            if let column = table.qualifiedColumn(name) { return column }
        }
        let table = candidates[0]
        throw ResolutionError(
            code: .unknownColumn, subject: "unknown column '\(name)'",
            detail: "\(table.table.schema.name)'s columns are: \(table.table.schema.allColumnNames.joined(separator: ", "))",
            position: position)
    }

    func resolveNamed(_ text: String, _ tables: [QueryTable], _ dialect: any SQLDialect, context: String) throws -> String {
        var ignored: [DatabaseValue] = []
        do {
            return try renderExpression(text, tables, dialect, into: &ignored)
        } catch let error as ActiveRecordError {
            throw ActiveRecordError(error.code, "\(context): \(error.message)")
        }
    }

    /// The error for a syntax error in `format`: `… at position 5 in "…"`.
    static func syntaxError(_ error: PredicateSyntaxError, in format: String) -> ActiveRecordError {
        ActiveRecordError(.invalidPredicate, "\(error.message) at position \(error.position) in \(quote(format))")
    }

    private func quote(_ format: String) -> String { Self.quote(format) }

    /// A format as messages show it: quoted, at most 200 characters, with the values of its
    /// literals masked (they may be data, as bound values may): a string's characters and a
    /// number's digits become `*`, so that positions in the message still point right.
    private static func quote(_ format: String) -> String {
        let shown = format.count > 200 ? String(format.prefix(200)) + "…" : format
        return "\"\(maskingLiterals(shown))\""
    }

    /// `name = 'secret' AND age > 4.2e1` → `name = '******' AND age > *****`.
    static func maskingLiterals(_ format: String) -> String {
        let scalars = Array(format.unicodeScalars)
        var result = String.UnicodeScalarView()
        func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar >= "0" && scalar <= "9" }
        func isWord(_ scalar: Unicode.Scalar) -> Bool {
            isDigit(scalar) || scalar == "_" || scalar == "$" || scalar.properties.isAlphabetic
        }
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            let previous: Unicode.Scalar? = index > 0 ? scalars[index - 1] : nil
            if scalar == "'" {
                // A string literal: its characters masked, a doubled quote inside counted as two.
                result.append(scalar)
                index += 1
                while index < scalars.count {
                    if scalars[index] == "'" {
                        if index + 1 < scalars.count, scalars[index + 1] == "'" {
                            result.append(contentsOf: "**".unicodeScalars)
                            index += 2
                            continue
                        }
                        result.append("'")
                        index += 1
                        break
                    }
                    result.append("*")
                    index += 1
                }
            } else if (isDigit(scalar) || (scalar == "." && index + 1 < scalars.count && isDigit(scalars[index + 1])))
                        && !(previous.map(isWord) ?? false) {
                // A number literal (not digits inside a name): digits, point, exponent.
                while index < scalars.count {
                    let current = scalars[index]
                    let signAfterExponent = (current == "+" || current == "-") && (scalars[index - 1] == "e" || scalars[index - 1] == "E")
                    guard isDigit(current) || current == "." || current == "e" || current == "E" || signAfterExponent else { break }
                    result.append("*")
                    index += 1
                }
            } else {
                result.append(scalar)
                index += 1
            }
        }
        return String(result)
    }
}

extension PredicateJSONUse {
    /// The same use, as the dialect takes it.
    var dialectUse: JSONPathUse {
        switch self {
        case .comparison(let op): .comparison(op.rawValue)
        case .isNull(let negated): .isNull(negated: negated)
        case .sortKey: .sortKey
        }
    }
}
