import ActiveRecord
import Foundation

/// The library side's model: 8 declared columns plus the built-in `id`,
/// `createdAt` and `updatedAt`.
final class BenchUser: Model {
    @Column var name: String = ""
    @Column var email: String = ""
    @Column var age: Int = 0
    @Column var score: Double = 0
    @Column var active: Bool = false
    @Column var note: String? = nil
    @Column var groupId: Int64 = 0
    @Column var payload: Data = Data()  // 16-byte blob

    /// The record as a side-neutral snapshot (id -1 when it has none).
    var snapshot: UserSnapshot {
        UserSnapshot(
            id: id ?? -1, name: name, email: email, age: age, score: score, active: active, note: note,
            groupId: groupId, payload: payload,
            createdAt: createdAt?.timeIntervalSince1970, updatedAt: updatedAt?.timeIntervalSince1970)
    }
}

/// The raw side's plain object for one row of the same table; the raw code
/// reads and writes it by hand.
final class RawUser {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var active: Bool
    var note: String?
    var groupId: Int64
    var payload: Data
    /// Seconds since 1970, as the library stores dates.
    var createdAt: Double
    var updatedAt: Double

    /// Makes an object with every field given (id 0 and no timestamps until inserted).
    init(
        id: Int64 = 0, name: String, email: String, age: Int, score: Double, active: Bool, note: String?,
        groupId: Int64, payload: Data, createdAt: Double = 0, updatedAt: Double = 0
    ) {
        self.id = id
        self.name = name
        self.email = email
        self.age = age
        self.score = score
        self.active = active
        self.note = note
        self.groupId = groupId
        self.payload = payload
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// A new object holding `row` (id 0 and no timestamps until inserted).
    convenience init(_ row: RowValues) {
        self.init(
            name: row.name, email: row.email, age: row.age, score: row.score, active: row.active, note: row.note,
            groupId: row.groupId, payload: row.payload)
    }

    /// The object as a side-neutral snapshot.
    var snapshot: UserSnapshot {
        UserSnapshot(
            id: id, name: name, email: email, age: age, score: score, active: active, note: note,
            groupId: groupId, payload: payload, createdAt: createdAt, updatedAt: updatedAt)
    }
}
