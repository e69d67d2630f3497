// snippet-imports: ActiveRecordPostgreSQL
// What PostgreSQL.md's blocks take as given.

let url = "postgresql://app@db.example.com/app"
let db = try! Database(.inMemory)
final class Order: Model { @Column var total: Double = 0 }
