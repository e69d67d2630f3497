import Foundation

/// The column values of one benchmark row. Row `i` (1-based) is the i-th row
/// inserted into a fresh table, so it gets id `i` on every side.
///
/// Every row's values are generated before any timing starts, so that the
/// timed loops of every side only copy them into objects.
struct RowValues {
    let name: String
    let email: String
    let age: Int
    let score: Double
    let active: Bool
    let note: String?
    let groupId: Int64
    let payload: Data

    /// The values of row `i`: varied per row, a `nil` note on even rows.
    init(_ i: Int) {
        name = "user\(i)"
        email = "user\(i)@example.com"
        age = i % 90
        score = Double(i) * 0.5
        active = i % 2 == 0
        note = i % 2 == 0 ? nil : "note \(i)"
        groupId = Int64(i % 100)
        payload = RowValues.payload(i)
    }

    /// 16 bytes: `i` then `~i`, both as little-endian 64-bit integers.
    static func payload(_ i: Int) -> Data {
        var bytes = Data(capacity: 16)
        withUnsafeBytes(of: UInt64(i).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: (~UInt64(i)).littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The values of rows 1...count, in id order (index `i - 1` holds row `i`).
    static func table(_ count: Int) -> [RowValues] {
        (1...count).map(RowValues.init)
    }

    /// What the update workload adds to every score.
    static let scoreIncrement = 1.0
}

/// A side-neutral copy of one record (a `BenchUser`, a `RawUser` or a `GRDBUser`), for checks.
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
    /// Seconds since 1970; `nil` when the record has none.
    var createdAt: Double?
    var updatedAt: Double?

    var description: String {
        "#\(id) name=\(name) email=\(email) age=\(age) score=\(score) active=\(active) "
            + "note=\(note ?? "nil") groupId=\(groupId) payload=\(payload.map { String($0) }.joined(separator: ",")) "
            + "createdAt=\(createdAt.map { String($0) } ?? "nil") updatedAt=\(updatedAt.map { String($0) } ?? "nil")"
    }
}
