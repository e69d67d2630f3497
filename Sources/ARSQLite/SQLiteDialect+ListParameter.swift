@_spi(Engines) import ARCore

/// A list bound as one parameter on SQLite: a JSON array, whose elements `json_each` returns.
extension SQLiteDialect {
    /// `expression IN (SELECT +value FROM json_each(?))`. The unary `+` takes the affinity off
    /// `json_each`'s value column, so that `expression`'s own applies to the elements as it
    /// does to the elements of `IN (?, …)` (a TEXT column matches the integer 5 as `'5'`).
    /// SQLite still searches an index on the column, one element at a time and in order, so
    /// that `ORDER BY` the column needs no sort.
    package func inList(_ expression: String, negated: Bool) -> String {
        expression + (negated ? " NOT IN" : " IN") + " (SELECT +value FROM json_each(?))"
    }

    /// A JSON array of the integers, which `json_each` returns as exact INTEGERs over all of
    /// Int64's range (no trip through a double).
    package func listParameter(_ elements: [DatabaseValue]) -> DatabaseValue {
        .text(elements.commaSeparatedIntegers(between: "[", and: "]"))
    }
}
