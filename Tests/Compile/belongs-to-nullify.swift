// expect-error: type 'BelongsToDependency' has no member 'nullify'
// A belongs-to cannot nullify: the key to clear is the record's own, and it is being
// destroyed. Accepted and ignored once; now it does not compile.
import ActiveRecord

final class Group: Model {
    @Column var title: String = ""
}

final class User: Model {
    @BelongsTo(dependency: .nullify) var group: Group?
}
