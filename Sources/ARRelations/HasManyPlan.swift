@_spi(Engines) import ARCore
import ARQuery

/// What the queries of one `@HasMany` property share, for its owner class: the key column,
/// its condition (``RelationKeyCondition``, its key made once) and where the relation's
/// field sits inside an owner. Found once per property on each thread (``of(_:owner:)``), so
/// that a relation's getter, run per owner, reads no key path and builds no condition: read
/// through its key path, the field cost more than the rest of the relation's query.
///
/// Immutable once made (`@unchecked Sendable`: its key path is an immutable object, which the
/// standard library does not mark `Sendable`); each thread keeps its own plans (no lock).
final class HasManyPlan: @unchecked Sendable {
    /// The property's storage key path (`\Owner._users`), the plan's identity. Held, so that
    /// its address, the cache's key, is not reused while the plan is cached.
    let storage: AnyKeyPath
    /// The key column the declaration names, `nil` for the default (as ``HasMany/key``).
    let declaredKey: String?
    /// `"key" = ?` on the key column.
    let condition: RelationKeyCondition
    /// The byte offset of the `HasMany` field in an owner object, when reflection found it;
    /// `nil`: the field is read through ``storage``.
    let offset: Int?

    var key: String { condition.column }

    init(storage: AnyKeyPath, declaredKey: String?, key: String, offset: Int?) {
        self.storage = storage
        self.declaredKey = declaredKey
        condition = RelationKeyCondition(column: key)
        self.offset = offset
    }

    /// The plan of the has-many property `storage` of `owner`'s class: cached per thread; made
    /// on first use, from `owner`'s declaration of the field (its key).
    static func of<Owner: Model, Child: Model>(
        _ storage: ReferenceWritableKeyPath<Owner, HasMany<Child>>, owner: Owner
    ) -> HasManyPlan {
        let id = ObjectIdentifier(storage)
        let (cached, isMaking) = plans.withValue { plans -> (HasManyPlan?, Bool) in
            if let last = plans.last, last.storage === storage { return (last, false) }
            guard let known = plans.byKeyPath[id] else { return (nil, plans.isMaking) }
            plans.last = known
            return (known, false)
        }
        if let cached { return cached }
        let field = owner[keyPath: storage]
        // Asked again while finding the field (the owner's initializer, which reflection runs,
        // reads a relation): a plan without the field, not kept.
        guard !isMaking else {
            return HasManyPlan(storage: storage, declaredKey: field.key, key: field.keyColumn(for: Owner.self), offset: nil)
        }
        // Made outside the per-thread value: finding the field may run the owner's initializer.
        plans.withValue { $0.isMaking = true }
        defer { plans.withValue { $0.isMaking = false } }
        // A scoped relation's field is read through its key path: the context then reads its scope.
        let plan = HasManyPlan(
            storage: storage, declaredKey: field.key, key: field.keyColumn(for: Owner.self),
            offset: field.scope == nil ? fieldOffset(of: storage) : nil)
        plans.withValue { plans in
            // Model classes are few; the bound only keeps a program that makes key paths at run time in check.
            if plans.byKeyPath.count >= 256 { plans.byKeyPath.removeAll() }
            plans.byKeyPath[id] = plan
            plans.last = plan
        }
        return plan
    }

    /// Where the field `storage` names sits in an `Owner` object: the offset of the one
    /// `HasMany<Child>` relation reflection found in the class, or, with several, of the one
    /// that a write through `storage` on a scratch record changes. `nil` when not found.
    private static func fieldOffset<Owner: Model, Child: Model>(
        of storage: ReferenceWritableKeyPath<Owner, HasMany<Child>>
    ) -> Int? {
        guard let mapping = try? ModelMapping.reflected(Owner.self) else { return nil }
        let candidates = mapping.hooks.filter { $0.kind == HasMany<Child>.self }
        if candidates.count == 1 { return candidates[0].offset }
        guard candidates.count > 1 else { return nil }
        let scratch = Owner()
        scratch[keyPath: storage].preloaded = []
        let written = candidates.filter { hook in scratch.hookSite(hook, as: HasMany<Child>.self).field.preloaded != nil }
        return written.count == 1 ? written[0].offset : nil
    }

    /// Whether the plan's key is `field`'s: the declaration is the class's, so it always is,
    /// unless an owner was given a relation of its own in its initializer.
    @inline(__always)
    func fits(_ declaredKey: String?) -> Bool { declaredKey == self.declaredKey }
}

/// One thread's plans by storage key path, and the one used last (a walk over one relation
/// finds it without hashing).
private struct HasManyPlans {
    var byKeyPath: [ObjectIdentifier: HasManyPlan] = [:]
    var last: HasManyPlan?
    /// Whether a plan is being made on this thread (see ``HasManyPlan/of(_:owner:)``).
    var isMaking = false
}

private let plans = PerThread { HasManyPlans() }

/// Runs `body` on the `HasMany` field at `offset` of `owner`, its children typed as `Model`:
/// a `HasMany<Child>`'s layout is the same for every model class `Child` (its arrays hold
/// references), and a concrete type's fields are reached without its generic metadata. The
/// records it holds are `Child`s, read back with `castRecords`/`asRecords(of:)` as the query's
/// own fetch reads its `[Model]` rows.
@inline(__always)
func withHasManyField<R>(of owner: Model, at offset: Int, _ body: (inout HasMany<Model>) throws -> R) rethrows -> R {
    try owner.hookSite(at: offset, as: HasMany<Model>.self).modify(body)
}
