// expect-error: extra argument 'index' in call
// A UNIQUE index is over one column, so a scoped uniqueness cannot ask for one. Accepted and
// ignored once; now it does not compile.
import ActiveRecord

final class Member: Model, Validating {
    @Column var name: String = ""
    @Column var groupId: Int64? = nil
    static let validations = Validations(for: Member.self) {
        $0.uniqueness(\.name, scope: ["groupId"], index: true)
    }
}
