@_spi(Engines) import ARCore

/// A list bound as one parameter on PostgreSQL: an array, sent as its text form (`{1,2,3}`)
/// of unspecified type, as every integer parameter is sent.
extension PostgreSQLDialect {
    /// `expression = ANY(?)` (`<> ALL(?)` when negated): the server reads the parameter as
    /// an array of `expression`'s type (a `bigint` column: `bigint[]`), converting each element
    /// as it converts the elements of `IN (?, …)`, and searches a B-tree index on the column
    /// for each element. `= ANY` and `<> ALL` give NULL where `IN` and `NOT IN` do.
    func inList(_ expression: String, negated: Bool) -> String {
        expression + (negated ? " <> ALL(?)" : " = ANY(?)")
    }

    /// The array's text form: the integers in decimal, between braces.
    func listParameter(_ elements: [DatabaseValue]) -> DatabaseValue {
        .text(elements.commaSeparatedIntegers(between: "{", and: "}"))
    }
}
