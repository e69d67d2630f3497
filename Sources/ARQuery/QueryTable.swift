@_spi(Engines) import ARCore

/// One table of a query: the queried one or a joined one.
struct QueryTable {
    let table: TableOperations
    /// The name that keys `fetchJoined()` rows and may qualify columns besides the table
    /// name: the class name of a model, the table name of a run-time model.
    let modelName: String
    /// The model class and its mapping, for queries of a class's records.
    let modelType: Model.Type?
    let mapping: ModelMapping?

    var quotedName: String { table.schema.name.quotedIdentifier }

    init(_ modelType: Model.Type) throws {
        let mapping = try modelType.mapping()
        self.modelType = modelType
        self.mapping = mapping
        table = mapping.table
        modelName = ModelMapping.modelName(modelType)
    }

    init(_ model: DynamicModel) {
        modelType = nil
        mapping = nil
        table = model.table
        modelName = model.schema.name
    }

    /// `"User"."id", "User"."createdAt", …` for the given declared columns (all when `nil`).
    func selectList(columns: [Int]? = nil) -> String {
        guard let columns else { return table.qualifiedSelectList }
        let qualified = table.qualifiedColumns
        return (qualified[0..<3] + columns.map { qualified[$0 + 3] }).joined(separator: ", ")
    }

    /// `"Table"."column"` for a column or property name, or `nil`.
    func qualifiedColumn(_ name: String) -> String? {
        table.position(of: name).map { table.qualifiedColumns[$0] }
    }

    /// The declared column index of a column or property name.
    /// - Throws: `.unknownColumn`, listing the table's columns.
    func columnIndex(_ name: String) throws -> Int {
        guard let position = table.position(of: name), position >= 3 else { throw table.schema.unknownColumn(name) }
        return position - 3
    }
}

/// A column or table that a query cannot resolve.
struct ResolutionError: Error {
    var code: ActiveRecordError.Code
    var subject: String
    var detail: String
    var position: Int
}
