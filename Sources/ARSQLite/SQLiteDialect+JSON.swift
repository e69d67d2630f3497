@_spi(Engines) import ARCore

/// Values inside JSON columns on SQLite: `json_type` and `json_extract` with the path bound as
/// one parameter (`$."settings"."theme"`; the query layer refuses a key holding `"`, which a
/// SQLite path cannot quote).
extension SQLiteDialect {
    /// See `SQLDialect.jsonPath(_:keys:_:)`. `json_extract` gives SQLite values (`true` as 1,
    /// `false` as 0, `null` as `NULL`), compared as SQLite compares them (numbers by value, text
    /// byte by byte); `json_type` keeps the JSON types apart, so that a string never compares
    /// with a number, as on PostgreSQL.
    package func jsonPath(_ column: String, keys: [String], _ use: JSONPathUse) -> JSONPathSQL {
        let path = DatabaseValue.text("$" + keys.map { "." + quoteSQL($0, with: "\"") }.joined())
        var sql = JSONPathSQL()
        func type() {
            sql.append("json_type(\(column), ")
            sql.append(constant: path)
            sql.append(")")
        }
        func value() {
            sql.append("json_extract(\(column), ")
            sql.append(constant: path)
            sql.append(")")
        }
        /// 1 for a string, 2 for a number or boolean, 3 for anything else.
        func typeClass(_ type: () -> Void) {
            sql.append("CASE ")
            type()
            sql.append(" WHEN 'text' THEN 1 WHEN 'integer' THEN 2 WHEN 'real' THEN 2 WHEN 'true' THEN 2 WHEN 'false' THEN 2 ELSE 3 END")
        }
        switch use {
        case .isNull(let negated):
            sql.append("coalesce(")
            type()
            sql.append(negated ? ", 'null') <> 'null'" : ", 'null') = 'null'")
        case .sortKey:
            sql.append("CASE WHEN ")
            type()
            sql.append(" IN ('object', 'array') THEN CAST(")
            value()
            sql.append(" AS BLOB) ELSE ")
            value()
            sql.append(" END")
        case .comparison(let op):
            let mismatch = op == "=" ? "0" : op == "<>" ? "1" : "NULL"
            sql.append("(CASE WHEN coalesce(")
            type()
            sql.append(", 'null') = 'null' THEN NULL WHEN ")
            typeClass(type)
            sql.append(" <> ")
            typeClass {
                sql.append("json_type(")
                sql.appendValue()
                sql.append(")")
            }
            sql.append(" THEN \(mismatch) ELSE ")
            value()
            sql.append(" \(op) json_extract(")
            sql.appendValue()
            sql.append(", '$') END)")
        }
        return sql
    }
}
