@_spi(Engines) import ARCore

/// Values inside JSON columns on PostgreSQL: `->` with the keys bound one by one
/// (`-> CAST(? AS TEXT)`: object members only, as on SQLite), on the column cast to `JSONB` (a no-op on a `JSONB` column,
/// and what lets a `TEXT` column of a table made before JSONB be queried alike).
extension PostgreSQLDialect {
    /// See `SQLDialect.jsonPath(_:keys:_:)`. Strings are compared as text in the `C` collation
    /// (byte by byte, as SQLite compares them, whatever the database's collation), numbers as
    /// `NUMERIC`, booleans as 0 and 1 (SQLite's `json_extract` gives them so); every branch is
    /// in a `CASE`, so that no cast is tried on a value of another JSON type.
    func jsonPath(_ column: String, keys: [String], _ use: JSONPathUse) -> JSONPathSQL {
        var sql = JSONPathSQL()
        func value() {
            // `->` with a TEXT key reads an object's member only (`NULL` on an array, where `#>`
            // would take a key of digits as an index): the same values as SQLite's `$."0"`.
            sql.append("(CAST(\(column) AS JSONB)")
            for key in keys {
                sql.append(" -> CAST(")
                sql.append(constant: .text(key))
                sql.append(" AS TEXT)")
            }
            sql.append(")")
        }
        func compared() {
            sql.append("CAST(")
            sql.appendValue()
            sql.append(" AS JSONB)")
        }
        func type(_ json: () -> Void) {
            sql.append("jsonb_typeof(")
            json()
            sql.append(")")
        }
        /// 1 for a string, 2 for a number or boolean, 3 for anything else.
        func typeClass(_ json: () -> Void) {
            sql.append("CASE ")
            type(json)
            sql.append(" WHEN 'string' THEN 1 WHEN 'number' THEN 2 WHEN 'boolean' THEN 2 ELSE 3 END")
        }
        /// A number or boolean as `NUMERIC` (`NULL` for anything else).
        func number(_ json: () -> Void) {
            sql.append("CASE ")
            type(json)
            sql.append(" WHEN 'boolean' THEN CASE WHEN ")
            json()
            sql.append(" = CAST('true' AS JSONB) THEN 1 ELSE 0 END WHEN 'number' THEN CAST(")
            json()
            sql.append(" AS NUMERIC) END")
        }
        /// A string's text, in the `C` collation.
        func text(_ json: () -> Void) {
            sql.append("(")
            json()
            sql.append(" #>> CAST('{}' AS TEXT[])) COLLATE \"C\"")
        }
        func missingOrNull() {
            sql.append("coalesce(")
            type(value)
            sql.append(", 'null') = 'null'")
        }
        switch use {
        case .isNull(let negated):
            if negated { sql.append("NOT ") }
            missingOrNull()
        case .sortKey:
            sql.append("CASE WHEN ")
            missingOrNull()
            sql.append(" THEN NULL ELSE ROW(")
            // Numbers and booleans, then strings, then objects and arrays, as on SQLite.
            sql.append("CASE ")
            type(value)
            sql.append(" WHEN 'number' THEN 1 WHEN 'boolean' THEN 1 WHEN 'string' THEN 2 ELSE 3 END, ")
            number(value)
            sql.append(", convert_to(CASE ")
            type(value)
            sql.append(" WHEN 'string' THEN ")
            value()
            sql.append(" #>> CAST('{}' AS TEXT[]) ELSE CAST(")
            value()
            sql.append(" AS TEXT) END, 'UTF8')) END")
        case .comparison(let op):
            let mismatch = op == "=" ? "FALSE" : op == "<>" ? "TRUE" : "NULL"
            sql.append("(CASE WHEN ")
            missingOrNull()
            sql.append(" THEN NULL WHEN ")
            typeClass(value)
            sql.append(" <> ")
            typeClass(compared)
            sql.append(" THEN \(mismatch) WHEN ")
            type(compared)
            sql.append(" = 'string' THEN ")
            text(value)
            sql.append(" \(op) ")
            text(compared)
            sql.append(" ELSE ")
            number(value)
            sql.append(" \(op) ")
            number(compared)
            sql.append(" END)")
        }
        return sql
    }
}
