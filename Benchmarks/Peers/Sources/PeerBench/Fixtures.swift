import Foundation

/// The values of one `BenchUser` row, the same for every side: row `i` (1-based, id `i` once
/// inserted in order) as ARBench's `RowValues`, except that its group is `(i - 1) % G + 1`, so
/// that every row belongs to one of the groups 1...G of the `BenchGroup` table.
struct RowValues {
    let name: String
    let email: String
    let age: Int
    let score: Double
    let active: Bool
    let note: String?
    let groupId: Int64
    let payload: Data

    init(_ i: Int, groups: Int) {
        name = "user\(i)"
        email = "user\(i)@example.com"
        age = i % 90
        score = Double(i) * 0.5
        active = i % 2 == 0
        note = i % 2 == 0 ? nil : "note \(i)"
        groupId = Int64((i - 1) % groups + 1)
        var bytes = Data(capacity: 16)
        withUnsafeBytes(of: UInt64(i).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: (~UInt64(i)).littleEndian) { bytes.append(contentsOf: $0) }
        payload = bytes
    }

    /// Rows 1...count (index `i - 1` holds row `i`).
    static func table(_ count: Int, groups: Int) -> [RowValues] {
        count == 0 ? [] : (1...count).map { RowValues($0, groups: groups) }
    }

    /// What the update workload adds to every score.
    static let scoreIncrement = 1.0
    /// The age query's bound: ages are `i % 90`, so `age > 80` holds for 9 rows in 90 (10 %).
    static let ageBound = 80
}

/// A side-neutral copy of one user row, for the checks.
struct UserSnapshot: Equatable, CustomStringConvertible {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var active: Bool
    var note: String?
    var groupId: Int64
    var payload: Data
    var createdAt: Double?
    var updatedAt: Double?

    /// Row `id` as inserted, with `scoreIncrement` added to its score (timestamps not compared).
    init(expected id: Int, groups: Int, scoreIncrement: Double = 0) {
        let row = RowValues(id, groups: groups)
        self.init(
            id: Int64(id), name: row.name, email: row.email, age: row.age, score: row.score + scoreIncrement,
            active: row.active, note: row.note, groupId: row.groupId, payload: row.payload, createdAt: nil, updatedAt: nil)
    }

    init(
        id: Int64, name: String, email: String, age: Int, score: Double, active: Bool, note: String?, groupId: Int64,
        payload: Data, createdAt: Double?, updatedAt: Double?
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

    /// The row's values without its timestamps (each side sets them from its own clock).
    var withoutTimestamps: UserSnapshot {
        var copy = self
        copy.createdAt = nil
        copy.updatedAt = nil
        return copy
    }

    var description: String {
        let bytes = payload.map { String($0) }.joined(separator: ",")
        let created = createdAt.map { String($0) } ?? "nil", updated = updatedAt.map { String($0) } ?? "nil"
        return "#\(id) \(name) \(email) age=\(age) score=\(score) active=\(active) note=\(note ?? "nil") group=\(groupId) "
            + "payload=\(bytes) created=\(created) updated=\(updated)"
    }
}
