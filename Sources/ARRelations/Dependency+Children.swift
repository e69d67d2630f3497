@_spi(Engines) import ARCore
import ARQuery
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `dependency` does, before the owner's `DELETE`, to the children of the owner whose key
/// is `owner` (its id, or its UUID or String key): those whose column `key` holds it (within
/// the relation's `scope`). A has-many's and a has-one's dependency alike.
///
/// - Parameter relation: the relation, for messages (`"Group's has-many"`).
/// - Throws: `.unknownColumn` when the children have no column `key`; what destroying or
///   saving a child throws.
func applyDependency<Child: Model>(
    _ dependency: Dependency, toChildrenOf owner: any ColumnValue, key: String, scope: ((Query<Child>) -> Query<Child>)?,
    for relation: String
) throws {
    switch dependency {
    case .none:
        return
    case .destroy:
        var children = Child.query().where(key, .equal(owner))
        if let scope { children = children.scoped(by: scope) }
        for child in try children.fetch() { try child.destroy() }
    case .nullify:
        let table = try Child.schema()
        guard table.columnIndex(named: key) != nil else { throw missingKey(key, in: Child.self, for: relation) }
        if let scope {
            // Only the children in the scope: the same `UPDATE`, its rows chosen by the scope's query.
            try Child.query().where(key, .equal(owner)).scoped(by: scope).updateAll([key: nil])
            return
        }
        let database = try Database.current
        try database.execute(
            database.dialect.updateSQL(table.name, setting: [.null(key), .bound("updatedAt")], where: [.equals(key)]),
            [.real(Date().timeIntervalSince1970), try owner.toSQL()])
    }
}

/// Sets `child`'s key column to the key of `owner` (saved: its id, or its UUID or String key)
/// and saves the child, as part of the owner's save (see ``saveRelated(_:of:)``).
/// - Throws: `.unknownColumn` when `Child` has no column `key`, naming `relation`; what saving throws.
func saveChild<Child: Model>(_ child: Child, key: String, of owner: Model, for relation: String) throws {
    do {
        try child.set([key: ownerLinkValue(owner)])
    } catch let error as ActiveRecordError where error.code == .unknownColumn {
        throw missingKey(key, in: Child.self, for: relation)
    }
    try saveRelated(child, of: owner)
}
