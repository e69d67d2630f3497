@_spi(Engines) import ARCore
import ARQuery

// How the to-many relations describe themselves to their owners' queries (`withCount`,
// `whereExists`, `havingCount`, `order(byCount:)`): see `AssociationDescribing`.

extension HasManyContext: AssociationDescribing {
    /// The children of every owner within the relation's scope, which hold the owner's id in the key column.
    func association<Other: Model>(of type: Other.Type) -> AssociationDescription<Other>? {
        guard Other.self == Child.self else { return nil }
        var children = Other.query()
        if let scope = owner[keyPath: storage].scope {
            guard let scope = scope as? (Query<Other>) -> Query<Other> else { return nil }
            children = children.scoped(by: scope)
        }
        return AssociationDescription(children: children, key: key)
    }
}

extension ThroughContext: AssociationDescribing {
    /// The related records of every owner, through the join model that holds the owner's id.
    func association<Other: Model>(of type: Other.Type) -> AssociationDescription<Other>? {
        guard Other.self == Child.self else { return nil }
        let join = self.join
        return AssociationDescription(children: Other.query(), key: join.ownerKey, through: (Join.self, join.childKey))
    }
}
